import { useEffect, useRef, useState } from "preact/hooks";
import type { ThreadView } from "../../client-core/thread-view.js";
import { sandboxLabel } from "../../protocol/agent.js";
import { useMentionPicker } from "./mention-picker.js";

export interface ComposerProps {
  view: ThreadView | null;
  connected: boolean;
  onSubmit(text: string): boolean;
  onQueue(text: string): boolean;
  /** The text changed (type-ahead). */
  onType(text: string): void;
  onStop(): void;
  onUndo(): void;
  onApprove(approvalId: string, approved: boolean): void;
  /** Plan mode is on: the turns sent only read, and the model answers with a plan. */
  plan: boolean;
  onPlan(plan: boolean): void;
  /** A message to put back in the box (a rewound turn's, to edit); a new `n` each time. */
  refill: { text: string; n: number } | null;
  /** The workspace files matching an `@` mention's query, best first. Default: no `@` picker. */
  onFiles?(query: string): Promise<string[]>;
}

/**
 * The input stays live while a turn streams: Enter sends or steers, Shift+Enter is a new line,
 * Tab queues (when there is text; otherwise it moves focus as usual), Esc stops.
 */
export function Composer({
  view,
  connected,
  onSubmit,
  onQueue,
  onType,
  onStop,
  onUndo,
  onApprove,
  plan,
  onPlan,
  refill,
  onFiles,
}: ComposerProps) {
  const [text, setText] = useState("");
  const input = useRef<HTMLTextAreaElement>(null);
  const mentions = useMentionPicker(onFiles);
  useEffect(() => {
    if (!refill) return;
    setText(refill.text);
    input.current?.focus();
  }, [refill]);
  const running = view?.turn != null;
  const send = (queue: boolean) => {
    const value = text.trim();
    if (!value) return;
    if ((queue ? onQueue : onSubmit)(value)) setText("");
    input.current?.focus();
  };
  const onKeyDown = (event: KeyboardEvent) => {
    const box = event.target as HTMLTextAreaElement;
    const inserted = mentions.onKeyDown(event, box.value, box.selectionStart, (next) => {
      setText(next.text);
      onType(next.text);
      // Once the new text is in the box, the cursor goes after the inserted path.
      requestAnimationFrame(() => box.setSelectionRange(next.cursor, next.cursor));
    });
    if (inserted) return;
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send(false);
    } else if (event.key === "Tab" && !event.shiftKey && text.trim()) {
      event.preventDefault();
      send(true);
    }
  };
  return (
    <footer class="composer">
      {view?.approvals.map((approval) => (
        <div
          class="approval"
          role="alertdialog"
          aria-label={approval.kind === "mcp" ? "MCP tool approval" : "Command approval"}
          key={approval.approval_id}
        >
          {approval.kind === "mcp" ? (
            <p>
              Spark wants to call{" "}
              <code>
                {approval.server} · {approval.tool}
              </code>{" "}
              with <code>{approval.arguments}</code>
            </p>
          ) : (
            <p>
              Spark wants to run <code>{approval.command}</code> in <code>{approval.cwd}</code>
              <span class={approval.sandbox === "danger-full-access" ? "sandbox unsandboxed" : "sandbox"}>
                {sandboxLabel(approval.sandbox)}
              </span>
            </p>
          )}
          <div class="approval-actions">
            <button type="button" class="button accept" onClick={() => onApprove(approval.approval_id, true)}>
              Approve
            </button>
            <button
              type="button"
              class="button reject"
              onClick={() => onApprove(approval.approval_id, false)}
            >
              Deny
            </button>
          </div>
        </div>
      ))}
      {view && view.queued.length > 0 ? (
        <ul class="queued" aria-label="Queued messages">
          {view.queued.map((message, i) => (
            <li
              // biome-ignore lint/suspicious/noArrayIndexKey: the same text may be queued twice; its place is its identity
              key={i}
              class="queued-message"
            >
              <span class="badge badge-queued">queued</span> {message}
            </li>
          ))}
        </ul>
      ) : null}
      {mentions.view}
      <div class="composer-row">
        <label class="visually-hidden" for="prompt">
          Message
        </label>
        <textarea
          id="prompt"
          ref={input}
          rows={2}
          value={text}
          placeholder={
            running
              ? "Steer: Enter redirects now, Tab queues for after, Esc stops"
              : plan
                ? "Plan mode: Spark reads and answers with a plan; edits and commands are refused"
                : "Ask Spark… (Enter sends)"
          }
          onInput={(event) => {
            const value = (event.target as HTMLTextAreaElement).value;
            setText(value);
            onType(value);
            mentions.update(value, (event.target as HTMLTextAreaElement).selectionStart);
          }}
          onKeyDown={onKeyDown}
          autofocus
        />
        <div class="composer-buttons">
          <button
            type="button"
            class="button primary"
            disabled={!connected || !text.trim()}
            onClick={() => send(false)}
          >
            {running ? "Steer" : "Send"}
          </button>
          {running ? (
            <button
              type="button"
              class="button"
              disabled={!connected || !text.trim()}
              onClick={() => send(true)}
            >
              Queue
            </button>
          ) : null}
          <button
            type="button"
            class={plan ? "button plan-toggle is-on" : "button plan-toggle"}
            aria-pressed={plan}
            onClick={() => onPlan(!plan)}
            title="Plan mode: the model reads and answers with a plan; edits and commands are refused"
          >
            Plan
          </button>
          <button
            type="button"
            class="button stop"
            disabled={!running || !connected}
            onClick={onStop}
            aria-keyshortcuts="Escape"
          >
            Stop
          </button>
          <button
            type="button"
            class="button"
            disabled={!view || running || !connected}
            onClick={onUndo}
            title="Revert the last patch"
          >
            Undo
          </button>
        </div>
      </div>
    </footer>
  );
}
