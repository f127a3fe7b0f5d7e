import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { patchPreviewOf } from "../../client-core/streaming-patch.js";
import type { Entry, ThreadView } from "../../client-core/thread-view.js";
import type { RewindRestore } from "../../protocol/agent.js";
import { type DiffMode, DiffView } from "./diff-view.js";
import { Markdown } from "./markdown.js";

export interface ConversationProps {
  view: ThreadView;
  diffMode: DiffMode;
  onResolve(itemId: string, path: string, accept: boolean): void;
  /** Carries out the plan the last turn answered with; null when it cannot be sent now. */
  onImplement: (() => void) | null;
  /** Goes back to before user message `itemId`; null when it cannot now (a turn runs, offline). */
  onRewind: ((itemId: string, restore: RewindRestore) => void) | null;
  /** Forks the thread from the turn a user message starts; null when not connected. */
  onFork: ((itemId: string) => void) | null;
}

/** The thread's entries in order; follows the stream unless the person scrolled up. */
export function Conversation({
  view,
  diffMode,
  onResolve,
  onImplement,
  onRewind,
  onFork,
}: ConversationProps) {
  const ref = useRef<HTMLDivElement>(null);
  const pinned = useRef(true);
  /** A pointer is down in the conversation: a scrollbar drag or a touch moves it, not the stream. */
  const dragging = useRef(false);
  useEffect(() => {
    const element = ref.current;
    if (element && pinned.current) element.scrollTop = element.scrollHeight;
  });
  useEffect(() => {
    const release = () => {
      dragging.current = false;
    };
    globalThis.addEventListener("pointerup", release);
    globalThis.addEventListener("pointercancel", release);
    return () => {
      globalThis.removeEventListener("pointerup", release);
      globalThis.removeEventListener("pointercancel", release);
    };
  }, []);
  // Only the person unpins: a scroll event alone cannot tell their scroll from the browser clamping
  // the position when the view shrinks (a preview replaced by a shorter result), and such an event
  // can arrive after the view grew again, far from the end.
  const onWheel = (event: WheelEvent) => {
    if (event.deltaY < 0) pinned.current = false;
  };
  const onKeyDown = (event: KeyboardEvent) => {
    if (["ArrowUp", "PageUp", "Home"].includes(event.key)) pinned.current = false;
  };
  const onScroll = () => {
    const element = ref.current;
    if (!element) return;
    const nearEnd = element.scrollHeight - element.scrollTop - element.clientHeight < 40;
    if (nearEnd) pinned.current = true;
    else if (dragging.current) pinned.current = false;
  };
  return (
    <div
      class="conversation"
      ref={ref}
      onScroll={onScroll}
      onWheel={onWheel}
      onKeyDown={onKeyDown}
      onPointerDown={() => {
        dragging.current = true;
      }}
      role="log"
      aria-label="Conversation"
    >
      {view.entries.length === 0 && !view.turn ? (
        <p class="empty">Ask Spark about this repository. Enter sends; while it types, Enter steers.</p>
      ) : null}
      <ol class="entries">
        {view.entries.map((entry) => (
          <li key={entry.id} class={`entry entry-${entry.kind}`} data-item-id={entry.id}>
            <EntryView
              entry={entry}
              diffMode={diffMode}
              onResolve={onResolve}
              onRewind={onRewind && ((restore) => onRewind(entry.id, restore))}
              // A turn is forked once it ended: never while one runs (the host refuses it).
              onFork={view.turn ? null : onFork}
            />
          </li>
        ))}
      </ol>
      {onImplement && answeredPlan(view) ? (
        <div class="plan-actions">
          <button type="button" class="button primary" onClick={onImplement}>
            Implement
          </button>
          <span class="plan-hint">switches plan mode off and carries out the plan above</span>
        </div>
      ) : null}
      {view.turn && !view.entries.some(isBeingWritten) ? (
        <p class="thinking" aria-live="polite">
          Thinking…
        </p>
      ) : null}
    </div>
  );
}

/** The last turn ran in plan mode and ended with the model's answer: a plan to implement. */
function answeredPlan(view: ThreadView): boolean {
  const lastUser = view.entries.findLast((entry) => entry.kind === "user");
  return (
    !view.turn && lastUser?.kind === "user" && lastUser.plan === true && view.entries.at(-1)?.kind === "agent"
  );
}

/** An agent message or an `apply_patch` call the model is writing now (shown as it grows). */
function isBeingWritten(entry: Entry): boolean {
  if (entry.kind === "agent") return entry.streaming;
  return entry.kind === "tool" && entry.item.name === "apply_patch" && entry.item.status === "running";
}

const REWIND_CHOICES: readonly { restore: RewindRestore; label: string }[] = [
  { restore: "both", label: "Code and conversation" },
  { restore: "conversation", label: "Conversation only" },
  { restore: "code", label: "Code only" },
];

/**
 * A user message's rewind: back to before it, taking back the code, the conversation or both. The
 * closed button's label is drawn by CSS (as Fork's), so the message's text stays the entry's only text.
 */
function RewindAction({ onRewind }: { onRewind: (restore: RewindRestore) => void }) {
  const [open, setOpen] = useState(false);
  if (!open)
    return (
      <button
        type="button"
        class="button small rewind"
        aria-label="Rewind to before this message"
        onClick={() => setOpen(true)}
      />
    );
  return (
    <fieldset class="rewind-choices" aria-label="Rewind to before this message">
      {REWIND_CHOICES.map((choice) => (
        <button
          type="button"
          key={choice.restore}
          class="button small"
          onClick={() => {
            setOpen(false);
            onRewind(choice.restore);
          }}
        >
          {choice.label}
        </button>
      ))}
      <button type="button" class="button small" onClick={() => setOpen(false)}>
        Cancel
      </button>
    </fieldset>
  );
}

function EntryView({
  entry,
  diffMode,
  onResolve,
  onRewind,
  onFork,
}: {
  entry: Entry;
  diffMode: DiffMode;
  onResolve: ConversationProps["onResolve"];
  onRewind: ((restore: RewindRestore) => void) | null;
  onFork: ConversationProps["onFork"];
}) {
  switch (entry.kind) {
    case "user":
      return (
        <div class="user-message">
          {entry.steer ? <span class="badge badge-steer">steer</span> : null}
          {entry.plan ? <span class="badge badge-plan">plan</span> : null}
          <p>{entry.text}</p>
          {onRewind ? <RewindAction onRewind={onRewind} /> : null}
          {onFork && !entry.steer ? (
            <button
              type="button"
              class="button small fork-turn"
              aria-label="Fork"
              title="Continue in a new session from this turn"
              onClick={() => onFork(entry.id)}
            />
          ) : null}
        </div>
      );
    case "agent":
      return (
        <div class={`agent-message${entry.streaming ? " is-streaming" : ""}`} aria-busy={entry.streaming}>
          <Markdown text={entry.text} />
        </div>
      );
    case "notice":
      return <p class={`notice tone-${entry.tone}`}>{entry.text}</p>;
    case "tool": {
      const { item } = entry;
      const display = item.display;
      if (item.name === "apply_patch" && item.status === "running")
        return <PatchBeingWritten entry={entry} diffMode={diffMode} />;
      if (display?.kind === "diff") {
        const states = entry.files;
        return (
          <div class="tool tool-patch">
            <p class="tool-title">
              <span class="tool-name">apply_patch</span> {display.files.length} file
              {display.files.length === 1 ? "" : "s"}
            </p>
            <DiffView
              itemId={entry.id}
              files={display.files}
              states={states}
              mode={diffMode}
              reviewable={item.status === "completed"}
              onResolve={(path, accept) => onResolve(entry.id, path, accept)}
            />
            {display.diagnostics?.length ? (
              <ul class="diagnostics" aria-label="Errors this edit introduced">
                {display.diagnostics.map((d) => (
                  <li key={`${d.path}:${d.line}:${d.column}:${d.message}`}>
                    <code>
                      {d.path}:{d.line}:{d.column}
                    </code>{" "}
                    {d.message}
                  </li>
                ))}
              </ul>
            ) : null}
            {display.diagnosticsNotices?.map((text) => (
              <p key={text} class="notice tone-dim">
                {text}
              </p>
            ))}
          </div>
        );
      }
      if (display?.kind === "command") {
        return (
          <div class="tool tool-command">
            <p class="tool-title">
              <span class="tool-name">$</span> <code>{display.command}</code>{" "}
              <span class="exit-code">exit {display.exitCode ?? "?"}</span>
            </p>
            {display.output ? <pre class="command-output">{display.output}</pre> : null}
          </div>
        );
      }
      return (
        <details class={`tool tool-${item.status}`}>
          <summary>
            <span class="tool-name">{item.name}</span> {argumentSummary(item.arguments)}{" "}
            <span class="tool-status">{item.status === "running" ? "running…" : item.status}</span>
          </summary>
          {item.output ? <pre class="tool-output">{item.output}</pre> : null}
        </details>
      );
    }
    default: {
      const unknown: never = entry;
      return String(unknown);
    }
  }
}

/**
 * An `apply_patch` the model is still writing: the patch so far as a diff, growing line by line,
 * until the call completes and the applied patch's diff (or the failure) replaces it.
 */
function PatchBeingWritten({
  entry,
  diffMode,
}: {
  entry: Extract<Entry, { kind: "tool" }>;
  diffMode: DiffMode;
}) {
  const preview = useMemo(() => patchPreviewOf(entry.item), [entry.item]);
  const files = preview?.files ?? [];
  return (
    <div class="tool tool-patch tool-running" aria-busy="true">
      <p class="tool-title">
        <span class="tool-name">apply_patch</span> {files.map((file) => file.path).join(", ")}{" "}
        <span class="tool-status">{preview?.complete ? "applying…" : "writing…"}</span>
      </p>
      {files.length > 0 ? (
        <DiffView
          itemId={entry.id}
          files={files}
          states={{}}
          mode={diffMode}
          reviewable={false}
          onResolve={() => {}}
        />
      ) : null}
      {preview?.truncated ? <p class="tool-status">The rest shows once the patch is applied.</p> : null}
    </div>
  );
}

/** `{"path": "src/a.ts"}` reads as `src/a.ts`; long arguments are cut. */
function argumentSummary(json: string): string {
  try {
    const args = JSON.parse(json) as Record<string, unknown>;
    const values = Object.values(args).filter((v) => typeof v === "string" || typeof v === "number");
    const text = values.join(" ");
    return text.length > 80 ? `${text.slice(0, 79)}…` : text;
  } catch {
    return "";
  }
}
