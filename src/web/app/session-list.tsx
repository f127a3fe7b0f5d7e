import { useState } from "preact/hooks";
import type { ThreadInfo } from "../../protocol/agent.js";
import { worktreeNameProblem } from "../../protocol/worktree-name.js";

export interface SessionListProps {
  sessions: ThreadInfo[];
  currentId: string | null;
  /** With `worktree`: in a new (or the named) git worktree of the host's repository. */
  onNew(worktree?: { name?: string }): void;
  onOpen(threadId: string): void;
  onRename(threadId: string, title: string): void;
  onDelete(threadId: string): void;
}

function Icon({ path }: { path: string }) {
  return (
    <svg class="icon" viewBox="0 0 24 24" aria-hidden="true">
      <path d={path} />
    </svg>
  );
}

function when(iso: string): string {
  const time = Date.parse(iso);
  if (Number.isNaN(time)) return "";
  const minutes = Math.round((Date.now() - time) / 60_000);
  if (minutes < 1) return "just now";
  if (minutes < 60) return `${minutes} min ago`;
  if (minutes < 60 * 24) return `${Math.round(minutes / 60)} h ago`;
  return new Date(time).toLocaleDateString();
}

/**
 * "New worktree session": an optional name (checked as the host checks it), then Start. The
 * host makes the worktree and its branch `spark/NAME`, or opens the existing one of that name.
 */
function WorktreeStart({ onStart }: { onStart(name: string | undefined): void }) {
  const [open, setOpen] = useState(false);
  const [name, setName] = useState("");
  const problem = name.trim() ? worktreeNameProblem(name.trim()) : null;
  if (!open) {
    return (
      <button type="button" class="button new-worktree" onClick={() => setOpen(true)}>
        New worktree session
      </button>
    );
  }
  const start = () => {
    if (problem) return;
    onStart(name.trim() || undefined);
    setOpen(false);
    setName("");
  };
  return (
    <form
      class="worktree-start"
      aria-label="New worktree session"
      onSubmit={(event) => {
        event.preventDefault();
        start();
      }}
    >
      <input
        class="worktree-name"
        aria-label="Worktree name"
        placeholder="name (optional)"
        value={name}
        autofocus
        aria-invalid={problem ? "true" : undefined}
        onInput={(event) => setName((event.target as HTMLInputElement).value)}
        onKeyDown={(event) => {
          if (event.key === "Escape") {
            event.stopPropagation();
            setOpen(false);
          }
        }}
      />
      <button type="submit" class="button small primary" disabled={problem !== null}>
        Start
      </button>
      {problem ? <p class="worktree-problem">{problem}</p> : null}
    </form>
  );
}

/** Saved and live sessions (the same transcripts the terminal uses): new, open, rename, delete. */
export function SessionList({ sessions, currentId, onNew, onOpen, onRename, onDelete }: SessionListProps) {
  const [editing, setEditing] = useState<string | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);
  return (
    <nav class="sessions" aria-label="Sessions">
      <button type="button" class="button primary new-session" onClick={() => onNew()}>
        New session
      </button>
      <WorktreeStart onStart={(name) => onNew(name ? { name } : {})} />
      <ul class="session-list">
        {sessions.map((session) => (
          <li key={session.id} class={`session${session.id === currentId ? " is-current" : ""}`}>
            {editing === session.id ? (
              <input
                class="rename-input"
                aria-label="New title"
                value={session.title}
                autofocus
                onKeyDown={(event) => {
                  const target = event.target as HTMLInputElement;
                  if (event.key === "Enter" && target.value.trim()) {
                    onRename(session.id, target.value.trim());
                    setEditing(null);
                  } else if (event.key === "Escape") {
                    event.stopPropagation();
                    setEditing(null);
                  }
                }}
                onBlur={() => setEditing(null)}
              />
            ) : (
              <button
                type="button"
                class="session-open"
                aria-current={session.id === currentId ? "true" : undefined}
                onClick={() => onOpen(session.id)}
              >
                <span class="session-title">{session.title}</span>
                <span class="session-meta">
                  {when(session.updatedAt)}
                  {session.worktree ? (
                    <span class="session-worktree" title={`${session.worktree.branch} in ${session.cwd}`}>
                      {" · "}⎇ {session.worktree.name}
                    </span>
                  ) : null}
                </span>
              </button>
            )}
            {confirming === session.id ? (
              <span class="session-actions">
                <button
                  type="button"
                  class="button small reject"
                  onClick={() => {
                    onDelete(session.id);
                    setConfirming(null);
                  }}
                >
                  Delete
                </button>
                <button type="button" class="button small" onClick={() => setConfirming(null)}>
                  Keep
                </button>
              </span>
            ) : (
              <span class="session-actions">
                <button
                  type="button"
                  class="icon-button"
                  aria-label={`Rename ${session.title}`}
                  title="Rename"
                  onClick={() => setEditing(session.id)}
                >
                  <Icon path="M4 20h4L19 9l-4-4L4 16v4zM14 6l4 4" />
                </button>
                <button
                  type="button"
                  class="icon-button"
                  aria-label={`Delete ${session.title}`}
                  title="Delete"
                  onClick={() => setConfirming(session.id)}
                >
                  <Icon path="M5 7h14M10 7V4h4v3M7 7l1 13h8l1-13M10 11v6M14 11v6" />
                </button>
              </span>
            )}
          </li>
        ))}
      </ul>
      {sessions.length === 0 ? <p class="sessions-empty">No saved sessions yet.</p> : null}
    </nav>
  );
}
