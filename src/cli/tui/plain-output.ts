import { formatUnifiedDiff } from "../../agent/diff.js";
import type { AgentMode, ApprovalRequestEvent, ThreadEvent, TurnStatus } from "../../protocol/agent.js";
import type { TurnToolChoice } from "../../protocol/agent-requests.js";
import type { TerminalThread } from "../terminal-thread.js";
import { diagnosticRows, outputRows } from "./display-rows.js";
import { firstLine, summarizeToolCall } from "./tool-summary.js";

export interface PlainOptions {
  /** The task: the one turn's message. */
  input: string;
  /** What the turn's first model response must call (`spark exec --tool-choice`). */
  toolChoice?: TurnToolChoice | undefined;
  /** The JSON Schema the final answer conforms to (`spark exec --output-schema`). Default: free text. */
  outputSchema?: Record<string, unknown> | undefined;
  /** The turn's mode (`spark exec --plan`). Default: the thread's. */
  mode?: AgentMode | undefined;
  /** Agent text (text mode) or one JSON line per event (`json`). */
  stdout: NodeJS.WritableStream;
  /** Tool summaries, diffs, notices and errors (both modes). */
  stderr: NodeJS.WritableStream;
  /** Write every ThreadEvent as one JSON line to stdout instead of text. */
  json: boolean;
  /** Aborting interrupts the turn (e.g. on SIGINT); it then resolves `interrupted`. */
  signal?: AbortSignal;
  /**
   * A time limit (`spark exec --timeout`): when `signal` aborts, the turn is interrupted and its
   * `turn.completed` reports `reason: "timeout"`, with a note naming `label` (e.g. `--timeout 90s`).
   */
  timeout?: { signal: AbortSignal; label: string };
  /**
   * Commands that need approval: `deny` them (nobody is there to ask), or leave them to `others`
   * (the other faces of a shared agent host: the web app, the editor). Default: `deny`.
   */
  approvals?: "deny" | "others";
}

/**
 * The non-interactive rendering (`spark exec`, or `spark` without a terminal): runs ONE turn and
 * streams it without ANSI codes. Agent text goes to stdout as it arrives; tool calls, plain unified
 * diffs and notices go to stderr, so `spark exec ... > answer.txt` keeps only the answer. With
 * `json`, stdout carries every event as a JSON line instead. Commands that need approval are
 * denied, with a note on stderr: nobody is there to ask (a thread whose policy auto-approves never
 * asks). Resolves with the turn's status.
 */
export async function runPlain(thread: TerminalThread, options: PlainOptions): Promise<TurnStatus> {
  const { stdout, stderr } = options;
  let turnId: string | null = null;
  let status: TurnStatus | null = null;
  /** Whether the agent text written so far ends a line (or nothing was written). */
  let atLineStart = true;
  /** Tool calls and reasoning that started: their deltas are arguments and thoughts, not agent text. */
  const notAnswer = new Set<string>();

  const text = (event: ThreadEvent) => {
    switch (event.type) {
      case "item.started":
        if (event.item.type === "tool_call" || event.item.type === "reasoning") notAnswer.add(event.item.id);
        return;
      case "item.delta":
        if (event.delta === "" || notAnswer.has(event.item_id)) return;
        stdout.write(event.delta);
        atLineStart = event.delta.endsWith("\n");
        return;
      case "item.completed": {
        const item = event.item;
        if (item.type === "agent_message") {
          if (!atLineStart) stdout.write("\n");
          atLineStart = true;
        } else if (item.type === "reasoning") {
          notAnswer.delete(item.id);
        } else if (item.type === "tool_call") {
          notAnswer.delete(item.id);
          stderr.write(toolText(item));
        } else if (item.type === "notice") {
          stderr.write(`note: ${item.text}\n`);
        }
        return;
      }
      case "turn.completed":
        if (!atLineStart) stdout.write("\n");
        atLineStart = true;
        if (event.reason === "timeout") return;
        if (event.status === "interrupted") stderr.write("spark: interrupted\n");
        // A limit that ended the turn says so in words of its own ("Stopped: ...").
        if (event.status === "failed" && event.reason)
          stderr.write(`spark: ${event.error?.message ?? `stopped (${event.reason})`}\n`);
        else if (event.status === "failed")
          stderr.write(`spark: error: ${event.error?.message ?? "the turn failed"}\n`);
        return;
      default:
        return;
    }
  };

  const timeout = options.timeout;
  const unsubscribe = thread.on((original) => {
    // The host only saw an interrupt: the time limit behind it is this face's to report.
    const event =
      original.type === "turn.completed" && original.status === "interrupted" && timeout?.signal.aborted
        ? { ...original, reason: "timeout" as const }
        : original;
    if (options.json) stdout.write(`${JSON.stringify(event)}\n`);
    else text(event);
    if (event.type === "turn.completed" && event.reason === "timeout")
      stderr.write(`spark: stopped: the task ran past ${timeout?.label ?? "its time limit"}\n`);
    if (event.type === "turn.started") turnId ??= event.turn_id;
    if (event.type === "turn.completed" && event.turn_id === turnId) status = event.status;
    if (event.type === "approval.requested" && options.approvals === "others") {
      stderr.write(
        `spark: ${approvalSubject(event)} waits for approval in the web app or the editor (spark serve's agent host)\n`,
      );
    } else if (event.type === "approval.requested") {
      stderr.write(
        `spark: denied ${approvalSubject(event)}: spark exec cannot ask for approval (pass --approval auto to let the agent run commands and MCP tools)\n`,
      );
      // Answered after every listener has seen the request, so each sees it before its resolution.
      queueMicrotask(() => thread.respondToApproval(event.approval_id, false));
    }
  });
  const interrupt = () => {
    thread.cancelSubAgents();
    thread.interrupt();
  };
  options.signal?.addEventListener("abort", interrupt, { once: true });
  timeout?.signal.addEventListener("abort", interrupt, { once: true });
  try {
    if (options.signal?.aborted || timeout?.signal.aborted) return "interrupted";
    await thread.startTurn(options.input, {
      toolChoice: options.toolChoice,
      mode: options.mode,
      outputSchema: options.outputSchema,
    });
    // Sub-agents it delegated to report back in turns of their own; the task ends with them.
    if (!options.signal?.aborted && !timeout?.signal.aborted) await thread.whenSettled();
  } finally {
    options.signal?.removeEventListener("abort", interrupt);
    timeout?.signal.removeEventListener("abort", interrupt);
    unsubscribe();
  }
  return status ?? "failed";
}

/** A finished tool call as plain text: a summary line, then the diff or the command's output. */
function toolText(
  item: Extract<ThreadEvent, { type: "item.completed" }>["item"] & { type: "tool_call" },
): string {
  const summary = summarizeToolCall(item);
  const display = item.display;
  if (display?.kind === "diff") {
    const checked = diagnosticRows(display).map(
      (row) => `    ${row.kind === "file" ? row.path : row.text}\n`,
    );
    return `* ${summary}\n${display.files.map((file) => formatUnifiedDiff(file)).join("")}${checked.join("")}`;
  }
  if (display?.kind === "command") {
    const exit = display.exitCode === null ? "killed" : `exit ${display.exitCode}`;
    const lines = outputRows(display.output).map(
      (row) => `    ${row.kind === "file" ? row.path : row.text}\n`,
    );
    return `* ${summary} (${exit})\n${lines.join("")}`;
  }
  if (item.status === "failed") return `* ${summary}: failed: ${firstLine(item.output ?? "")}\n`;
  return `* ${summary}\n`;
}

/** What waits for approval, in a line of plain output: `` `npm test` `` or `the MCP tool everything · get-sum`. */
function approvalSubject(approval: ApprovalRequestEvent): string {
  return approval.kind === "shell"
    ? `\`${approval.command}\``
    : `the MCP tool ${approval.server} · ${approval.tool}`;
}
