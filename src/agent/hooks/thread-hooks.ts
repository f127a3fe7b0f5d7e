import path from "node:path";
import type { AgentMode } from "../../protocol/agent.js";
import { type ItemLog, newItemId } from "../item-log.js";
import type { CommandSandbox } from "../sandbox/command-sandbox.js";
import { type HookOutcome, hookOutcome } from "./hook-outcome.js";
import { runHookProcess } from "./hook-process.js";
import { type HookDefinition, type HookEvent, hookMatches } from "./hooks-file.js";

/** The hooks a session runs (user and trusted project files), and what was said loading them. */
export interface HookSet {
  hooks: readonly HookDefinition[];
  /** Files that were skipped or malformed, said once per thread at its first turn. */
  notices: readonly string[];
}

/** Times one turn may be continued by Stop hooks; a further block is reported, not obeyed. */
export const MAX_STOP_CONTINUATIONS = 5;

/** What of a turn the hooks need: it structurally matches the turn runner's ActiveTurn. */
export interface HookTurn {
  id: string;
  controller: AbortController;
  mode: AgentMode;
}

/** A finished tool call, as the tool hooks see it. */
export interface HookToolCall {
  call_id: string;
  name: string;
  arguments: string;
}

export interface ThreadHooksOptions {
  set: HookSet;
  /** Where hooks run: the thread's command sandbox. */
  sandbox: CommandSandbox;
  /** The workspace root (a real path): the hooks' working directory. */
  root: string;
  /** The thread's id, sent as `session_id`. */
  sessionId: string;
  /** Where notices go. */
  log: ItemLog;
  /** The thread continues a saved session: SessionStart's `source` is `resume`. Default: false. */
  resumed?: boolean;
}

/**
 * Runs a thread's hooks at the points of a turn, each in the command sandbox with its time budget,
 * and tells the person about each one's output and failure as a notice of the turn. A failing hook
 * never fails the turn: only exit code 2 or a JSON decision changes what happens.
 */
export class ThreadHooks {
  private sessionStarted = false;

  constructor(private readonly options: ThreadHooksOptions) {}

  /**
   * Before a turn's input goes to the model: on the thread's first turn, the load notices and the
   * SessionStart hooks, then UserPromptSubmit. `blocked`: the message must not be sent (the hook's
   * reason); `context`: text to add to the message the model reads ("" when none).
   */
  async promptSubmitted(
    turn: HookTurn,
    prompt: string,
  ): Promise<{ blocked: string | null; context: string }> {
    const context: string[] = [];
    if (!this.sessionStarted) {
      this.sessionStarted = true;
      for (const text of this.options.set.notices) this.notice(turn, text);
      const source = this.options.resumed ? "resume" : "startup";
      const started = await this.run(turn, "SessionStart", source, { source });
      context.push(...contextOf("SessionStart", started));
    }
    const submitted = await this.run(turn, "UserPromptSubmit", undefined, { prompt });
    const blocked = submitted.find((outcome) => outcome.block !== null)?.block ?? null;
    if (blocked !== null) {
      this.notice(turn, `Hook UserPromptSubmit blocked the message; it was not sent: ${blocked}`);
      return { blocked, context: "" };
    }
    context.push(...contextOf("UserPromptSubmit", submitted));
    return { blocked: null, context: context.join("") };
  }

  /** Before a tool call runs: the reason a PreToolUse hook denied it, which the model gets as its result; null: run it. */
  async beforeTool(turn: HookTurn, call: HookToolCall): Promise<string | null> {
    const outcomes = await this.run(turn, "PreToolUse", call.name, toolFields(call));
    const denied = outcomes.find((outcome) => outcome.block !== null)?.block;
    if (denied === undefined || denied === null) return null;
    this.notice(turn, `Hook PreToolUse denied ${call.name}: ${denied}`);
    return `Denied by a PreToolUse hook, so the call was not run: ${denied}`;
  }

  /** After a tool call ran: what PostToolUse hooks tell the model, to add to its result ("" when none). */
  async afterTool(
    turn: HookTurn,
    call: HookToolCall,
    result: { output: string; isError: boolean },
  ): Promise<string> {
    const outcomes = await this.run(turn, "PostToolUse", call.name, {
      ...toolFields(call),
      tool_response: { output: result.output, is_error: result.isError },
    });
    const feedback = outcomes.flatMap((outcome) => (outcome.block === null ? [] : [outcome.block]));
    return [...feedback.map((text) => wrap("PostToolUse", text)), ...contextOf("PostToolUse", outcomes)].join(
      "",
    );
  }

  /**
   * When the model has answered and the turn would end: what a Stop hook wants the model to do
   * next, sent as the turn's next input (null: the turn ends). `continued` is how often this turn
   * was continued so; past {@link MAX_STOP_CONTINUATIONS} a block is reported and the turn ends.
   */
  async beforeStop(turn: HookTurn, lastMessage: string, continued: number): Promise<string | null> {
    const outcomes = await this.run(turn, "Stop", undefined, {
      stop_hook_active: continued > 0,
      last_assistant_message: lastMessage,
    });
    const reason = outcomes.find((outcome) => outcome.block !== null)?.block ?? null;
    if (reason === null || turn.controller.signal.aborted) return null;
    if (continued >= MAX_STOP_CONTINUATIONS) {
      this.notice(
        turn,
        `Hook Stop asked the turn to go on again (${reason}), but it went on ${continued} times already; it ends.`,
      );
      return null;
    }
    this.notice(turn, `Hook Stop: the turn goes on: ${reason}`);
    return reason;
  }

  /** Before older turns are compacted: automatically as the context fills, or by hand (`/compact FOCUS`). */
  async beforeCompact(turn: HookTurn, trigger: "auto" | "manual" = "auto", focus = ""): Promise<void> {
    await this.run(turn, "PreCompact", trigger, { trigger, custom_instructions: focus });
  }

  /** Runs the hooks of `event` that match `value` together; each one's notice is said in file order. */
  private async run(
    turn: HookTurn,
    event: HookEvent,
    value: string | undefined,
    fields: Record<string, unknown>,
  ): Promise<HookOutcome[]> {
    const hooks = this.options.set.hooks.filter((hook) => hook.event === event && hookMatches(hook, value));
    if (hooks.length === 0 || turn.controller.signal.aborted) return [];
    const input = JSON.stringify({
      session_id: this.options.sessionId,
      cwd: this.options.root,
      hook_event_name: event,
      permission_mode: turn.mode,
      ...fields,
    });
    const outcomes = await Promise.all(hooks.map((hook) => this.runOne(turn, hook, input)));
    // An interrupt killed them: nothing they said applies.
    if (turn.controller.signal.aborted) return [];
    outcomes.forEach((outcome, index) => {
      if (outcome.notice !== null)
        this.notice(turn, `Hook ${event} ${label(hooks[index]!)}: ${outcome.notice}`);
    });
    return outcomes;
  }

  private async runOne(turn: HookTurn, hook: HookDefinition, input: string): Promise<HookOutcome> {
    const { sandbox, root } = this.options;
    try {
      // The file's folder: a user's hook scripts beside it stay readable under the sandbox's private /tmp.
      const spec = await sandbox.spawnFor(hook.command, root, [path.dirname(hook.file)]);
      spec.env.SPARK_PROJECT_DIR = root;
      // Hook scripts written for other agents find the project under this name.
      spec.env.CLAUDE_PROJECT_DIR = root;
      // bash runs ~/.bashrc when its stdin is a socket (as Node's pipes are) at shell level 1, as
      // if started by rshd: a hook starts at level 2, so the person's .bashrc never runs in it.
      spec.env.SHLVL = "1";
      const run = await runHookProcess(spec, {
        cwd: root,
        input,
        timeoutMs: hook.timeoutMs,
        signal: turn.controller.signal,
      });
      return hookOutcome(hook.event, run, hook.timeoutMs);
    } catch (error) {
      return { block: null, context: null, notice: `did not run: ${(error as Error).message}` };
    }
  }

  private notice(turn: HookTurn, text: string): void {
    this.options.log.complete(turn.id, { type: "notice", id: newItemId(), text });
  }
}

function toolFields(call: HookToolCall): Record<string, unknown> {
  let input: unknown = call.arguments;
  try {
    input = JSON.parse(call.arguments);
  } catch {
    // Not JSON: the tool refuses it; the hook sees the text as written.
  }
  return { tool_name: call.name, tool_input: input, tool_use_id: call.call_id };
}

function contextOf(event: HookEvent, outcomes: readonly HookOutcome[]): string[] {
  return outcomes.flatMap((outcome) => (outcome.context === null ? [] : [wrap(event, outcome.context)]));
}

/** How hook text reaches the model: after the message or tool result it belongs to, marked as a hook's. */
function wrap(event: HookEvent, text: string): string {
  return `\n\n<hook-context event="${event}">\n${text}\n</hook-context>`;
}

/** The hook as a notice names it: its command, cut to one short line. */
function label(hook: HookDefinition): string {
  const line = hook.command.split("\n")[0]!;
  return `\`${line.length > 60 ? `${line.slice(0, 59)}…` : line}\``;
}
