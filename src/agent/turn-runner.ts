import { ClientError } from "../client/client-error.js";
import type { ResponseStream, ResponsesClient } from "../client/responses-client.js";
import type {
  AgentMode,
  ThreadInfo,
  ThreadItem,
  TurnEndReason,
  TurnStats,
  TurnStatus,
} from "../protocol/agent.js";
import type { TurnToolChoice } from "../protocol/agent-requests.js";
import { SparkError, type WireError } from "../protocol/errors.js";
import type { ResponseObject } from "../protocol/responses.js";
import type { ContextCompaction } from "./context-compaction.js";
import { type ConversationInput, historyFromItems } from "./conversation-history.js";
import type { EditJournal } from "./edit-journal.js";
import type { HookToolCall, ThreadHooks } from "./hooks/thread-hooks.js";
import { type ItemLog, newItemId } from "./item-log.js";
import { expandMentions } from "./mentions/file-mentions.js";
import { planModeRefusal, runsInPlanMode, withPlanNote } from "./plan-mode.js";
import { type Repetition, RepetitionGuard } from "./repetition-guard.js";
import type { requestSettings } from "./request-settings.js";
import type { ResponseChain } from "./response-chain.js";
import { runTool, type Tool, type ToolContext, type ToolResult } from "./tools/tool.js";
import type { TurnSteers } from "./turn-steers.js";

/** The running turn: what its steers, interrupt and tools act on. */
export interface ActiveTurn {
  id: string;
  controller: AbortController;
  stream: ResponseStream | null;
  /** The turn's steers until each reaches the model (its user message is recorded then) or is reported. */
  steers: TurnSteers;
  /** Set as the turn decides to end: from then on nothing joins it (a new message is a new turn). */
  closed: boolean;
  firstTokenAt: number | null;
  /** What the turn's next model response must call (see `turn.start`); used once. */
  toolChoice?: TurnToolChoice | undefined;
  /** The JSON Schema every model response of the turn answers in (see `turn.start`). */
  outputSchema?: Record<string, unknown>;
  /** `plan`: only read-only tools run (see plan-mode.ts). */
  mode: AgentMode;
}

/** How a turn ended, as `turn.completed` reports it. */
export interface TurnOutcome {
  status: TurnStatus;
  stats: TurnStats;
  error?: WireError;
  /** The limit that ended it, if one did. */
  reason?: TurnEndReason;
}

export interface TurnRunnerOptions {
  client: ResponsesClient;
  chain: ResponseChain;
  log: ItemLog;
  /** The thread's info; the first turn names it. */
  info: ThreadInfo;
  journal: EditJournal;
  /** The tools listed with every request; a call names one of them. */
  tools: readonly Tool[];
  /** The settings every request repeats (see requestSettings). */
  settings: () => ReturnType<typeof requestSettings>;
  /** What a tool call of `turn` may use. */
  toolContext: (turn: ActiveTurn) => ToolContext;
  /** The thread's context meter and compaction (see ContextCompaction). */
  context: ContextCompaction;
  /** Model responses with tool calls one turn may run; the next call ends it. Default: 50. */
  maxToolRounds?: number | undefined;
  /** The thread's hooks (hooks.json). Default: none run. */
  hooks?: ThreadHooks | undefined;
}

const DEFAULT_TITLE = "New session";

/** Rounds of tool calls a turn runs by default before it stops (README → Limits). */
export const DEFAULT_MAX_TOOL_ROUNDS = 50;

/** The same tool call (name and arguments) this many times in a row is a loop: the turn stops. */
export const MAX_SAME_CALLS = 5;

/**
 * The turn loop: sends the turn's input, narrates the model's stream as items, runs the tool calls
 * it asks for and sends their outputs (with any steers), until the model answers without a call.
 */
export class TurnRunner {
  constructor(private readonly options: TurnRunnerOptions) {}

  /** Runs `turn` to its end. Emits `turn.started` synchronously; the caller reports the outcome. */
  async run(turn: ActiveTurn, input: string): Promise<TurnOutcome> {
    const { chain, log, info } = this.options;
    const started = performance.now();
    const stats: TurnStats = {
      timeToFirstTokenMs: null,
      tokensPerSecond: null,
      inputTokens: 0,
      cachedInputTokens: 0,
      outputTokens: 0,
    };
    let decodeMs = 0;
    log.emit({ type: "turn.started", turn_id: turn.id, input });
    if (info.title === DEFAULT_TITLE) info.title = input.trim().split("\n")[0]!.slice(0, 60) || DEFAULT_TITLE;
    const submitted = (await this.options.hooks?.promptSubmitted(turn, input)) ?? {
      blocked: null,
      context: "",
    };
    if (submitted.blocked !== null) {
      // Never recorded: a blocked message is not part of the conversation, not even on resume.
      turn.closed = true;
      const error = new SparkError(
        "invalid_request",
        "Not sent: a UserPromptSubmit hook blocked the message.",
      );
      return { status: "failed", stats, error: error.toWire() };
    }
    const message = log.recordUserMessage(turn.id, input, turn.mode);
    chain.mark(message);
    // `@path` mentions: the files go to the model after the message; the message shows as typed.
    const mentions = await expandMentions(input, this.options.toolContext(turn).workspace);
    for (const text of mentions.notices) log.complete(turn.id, { type: "notice", id: newItemId(), text });
    /** The turn's message until its first request is sent (a compaction before it leaves the message to that request). */
    let pending: string | undefined = message;

    const content =
      (turn.mode === "plan" ? withPlanNote(input) : input) + mentions.attachments + submitted.context;
    let next: ConversationInput[] = [...chain.owedOutputs, { role: "user", content }];
    chain.owedOutputs = [];
    let status: TurnStatus = "completed";
    let error: SparkError | undefined;
    let reason: TurnEndReason | undefined;
    const maxToolRounds = this.options.maxToolRounds ?? DEFAULT_MAX_TOOL_ROUNDS;
    let toolRounds = 0;
    let stopContinuations = 0;
    const sameCalls = { key: "", count: 0 };
    /** Set as the turn's last response is stopped for repeating itself. */
    const watch: { repetition: Repetition | null } = { repetition: null };
    /** Ends the turn at a limit: the calls of its last response are answered unrun, so the chain stays valid. */
    const stopAt = (limit: TurnEndReason, message: string, unrun: FunctionCall[], output: string) => {
      chain.owedOutputs = unrun.map((call) => this.skip(turn, call, output));
      status = "failed";
      reason = limit;
      error = new SparkError("limit_reached", message);
    };
    try {
      for (;;) {
        const { context } = this.options;
        if (context.due && (await context.compact(turn, { trigger: "auto", pending })) !== null) {
          // The outputs `next` carries are in the compacted conversation (each call's item has its output).
          next = next.filter((entry) => !("type" in entry && entry.type === "function_call_output"));
          // A new chain: the server no longer adds the steers it held for the old one.
          turn.steers.releaseHeld();
          next.push(...turn.steers.carry().map(userMessage));
        }
        pending = undefined;
        const { response, calls } = await this.stream(turn, next, watch).catch((caught: unknown) => {
          // After a rewind the response it went back to may be gone: the kept conversation is resent.
          if (!(caught instanceof ClientError && caught.code === "previous_response_not_found")) throw caught;
          if (toolRounds > 0 || !chain.fallBack()) throw caught;
          next = [{ role: "user", content }];
          return this.stream(turn, next, watch);
        });
        stats.inputTokens += response.usage?.input_tokens ?? 0;
        stats.cachedInputTokens += response.usage?.input_tokens_details.cached_tokens ?? 0;
        stats.outputTokens += response.usage?.output_tokens ?? 0;
        if (response.usage) {
          chain.lastTokens = response.usage.input_tokens + response.usage.output_tokens;
          this.options.context.report(turn.id);
        }
        if (response.timing && response.usage && response.timing.tokens_per_second > 0) {
          decodeMs += ((response.usage.output_tokens - 1) * 1000) / response.timing.tokens_per_second;
        }
        if (turn.controller.signal.aborted) {
          chain.owedOutputs = calls.map((call) => this.notRun(turn, call));
          status = "interrupted";
          break;
        }
        if (watch.repetition) {
          stopAt("repetition", repetitionMessage(watch.repetition), calls, NOT_RUN_REPEATING);
          break;
        }
        if (response.status === "incomplete" && response.incomplete_details?.reason === "max_output_tokens") {
          const cap = response.max_output_tokens;
          stopAt(
            "max_output_tokens",
            `Stopped: the reply reached its output limit${cap ? ` of ${cap} tokens` : ""} ` +
              "(--max-output-tokens, or max_output_tokens under [limits] in config.toml). Send a message to let it go on.",
            calls,
            NOT_RUN_CUT,
          );
          break;
        }
        const looping = repeatedCall(sameCalls, calls);
        if (looping) {
          stopAt(
            "repetition",
            `Stopped: the model was repeating itself (the same ${looping} call ${MAX_SAME_CALLS} times in a row). ` +
              "Send a message to steer it another way.",
            calls,
            NOT_RUN_REPEATING,
          );
          break;
        }
        if (calls.length === 0) {
          // A steer sent as the response ended is refused by it: it starts the next response.
          await turn.steers.answered();
          if (turn.controller.signal.aborted) {
            status = "interrupted";
            break;
          }
          if (!turn.steers.waiting) {
            const more = await this.stopHooks(turn, stopContinuations);
            if (turn.controller.signal.aborted) {
              status = "interrupted";
              break;
            }
            // Steers sent while the Stop hooks ran start the next response too.
            if (more === null && !turn.steers.waiting) break;
            if (more !== null) stopContinuations++;
            next = [...(more === null ? [] : [more]), ...turn.steers.carry()].map(userMessage);
            continue;
          }
        } else if (++toolRounds > maxToolRounds) {
          // A model that keeps calling tools: its calls are answered unrun (their items end failed).
          stopAt(
            "max_tool_rounds",
            `Stopped after ${rounds(maxToolRounds)} of tool calls, the most one turn may run ` +
              "(--max-tool-rounds, or max_tool_rounds under [limits] in config.toml). Send a message to let it go on.",
            calls,
            `Not run: this turn reached its limit of ${rounds(maxToolRounds)} of tool calls. Say where you are; the person can let you go on.`,
          );
          break;
        }
        next = [];
        for (const call of calls) {
          next.push(
            turn.controller.signal.aborted ? this.notRun(turn, call) : await this.runCall(turn, call),
          );
        }
        if (turn.controller.signal.aborted) {
          status = "interrupted";
          chain.owedOutputs = next;
          break;
        }
        next.push(...turn.steers.carry().map(userMessage));
      }
    } catch (caught) {
      if (turn.controller.signal.aborted) status = "interrupted";
      else if (watch.repetition) {
        // Stopped for repeating itself, and the cancelled response ended without a final object.
        stopAt("repetition", repetitionMessage(watch.repetition), [], NOT_RUN_REPEATING);
      } else {
        status = "failed";
        error = SparkError.from(caught);
      }
    }
    turn.closed = true;
    if (turn.steers.held) {
      // The server would add the steers it holds to the next request chained from this turn's
      // last response, after they were reported not sent: the next request resends the
      // conversation instead (see AgentThread.runTurn).
      chain.owedOutputs = [];
      chain.startOver(historyFromItems(log.items));
    }
    // Whole milliseconds and tenths of a token: what a person reads, and what JSON should carry.
    if (turn.firstTokenAt !== null) stats.timeToFirstTokenMs = Math.round(turn.firstTokenAt - started);
    if (decodeMs > 0) stats.tokensPerSecond = Math.round((stats.outputTokens * 10_000) / decodeMs) / 10;
    return {
      status,
      stats,
      ...(error ? { error: (error as SparkError).toWire() } : {}),
      ...(reason ? { reason } : {}),
    };
  }

  /**
   * One model response (following any steered successors), narrated as items: its reasoning as a
   * reasoning item, its text as an agent_message, each function call as a tool_call item from its first token on (`item.delta`
   * carries the arguments as the model writes them). Returns the calls the model finished; a call
   * cut off (interrupt, steer) ends failed at once and is never run. A reply that starts repeating
   * itself is cancelled, and `watch.repetition` says what repeated.
   */
  private async stream(
    turn: ActiveTurn,
    input: ConversationInput[],
    watch: { repetition: Repetition | null },
  ): Promise<{ response: ResponseObject; calls: FunctionCall[] }> {
    const { client, chain, log } = this.options;
    const choice = turn.toolChoice;
    turn.toolChoice = undefined;
    const stream = client.create(
      {
        ...this.options.settings(),
        ...chain.next(input, { consume: true }),
        ...(choice === undefined || choice === "auto"
          ? {}
          : {
              tool_choice: choice === "required" ? choice : { type: "function" as const, name: choice.name },
            }),
        ...(turn.outputSchema
          ? {
              text: {
                format: { type: "json_schema", name: "output", schema: turn.outputSchema, strict: true },
              },
            }
          : {}),
      },
      { signal: turn.controller.signal },
    );
    turn.stream = stream;
    let guard = new RepetitionGuard();
    /** Everything the model writes goes through the guard, which stops the response at a loop. */
    const guarded = (found: Repetition | null) => {
      if (!found || watch.repetition) return;
      watch.repetition = found;
      stream.cancel();
    };
    /** The reasoning or message being streamed; whatever the model writes next ends it. */
    const streamed: { open: StreamedText | null } = { open: null };
    const finish = () => {
      if (streamed.open) log.complete(turn.id, streamed.open);
      streamed.open = null;
    };
    const extend = (type: StreamedText["type"], delta: string) => {
      turn.firstTokenAt ??= performance.now();
      let item = streamed.open;
      if (item === null || item.type !== type) {
        finish();
        item = { type, id: newItemId(), text: "" } as StreamedText;
        streamed.open = item;
        log.emit({ type: "item.started", turn_id: turn.id, item: { ...item } });
      }
      item.text += delta;
      log.emit({ type: "item.delta", turn_id: turn.id, item_id: item.id, delta });
    };
    const calls: FunctionCall[] = [];
    /** Calls being written, by output item id. */
    const writing = new Map<string, ToolCallItem>();
    const cutOff = (item: ToolCallItem) =>
      log.complete(turn.id, {
        ...item,
        status: "failed",
        output: watch.repetition ? NOT_APPLIED_REPEATING : NOT_APPLIED_CUT_OFF,
        partial: true,
      });
    /** Responses of this stream that have started (the model has their input): the first, then steered successors. */
    const started = new Set<string>();
    /** Response `id` started: the steers its input carries are part of the conversation from here on. */
    const start = async (id: string) => {
      if (started.has(id)) return;
      started.add(id);
      for (const steer of await turn.steers.started(id, started.size === 1))
        log.recordUserMessage(turn.id, steer, "default", true);
    };
    try {
      for await (const event of stream) {
        turn.steers.observe(event);
        if (event.type === "response.output_item.added") guarded(guard.boundary());
        else if (
          event.type === "response.output_text.delta" ||
          event.type === "response.reasoning_text.delta" ||
          event.type === "response.function_call_arguments.delta"
        )
          guarded(guard.push(event.delta));
        if (event.type === "response.output_item.added" && event.item.type === "function_call") {
          turn.firstTokenAt ??= performance.now();
          finish();
          const item = callItem({ ...event.item, arguments: "" });
          writing.set(event.item.id, item);
          log.emit({ type: "item.started", turn_id: turn.id, item: { ...item } });
        } else if (event.type === "response.function_call_arguments.delta") {
          const item = writing.get(event.item_id);
          if (!item) continue;
          item.arguments += event.delta;
          log.emit({ type: "item.delta", turn_id: turn.id, item_id: item.id, delta: event.delta });
        } else if (event.type === "response.output_item.done" && event.item.type === "function_call") {
          const started = writing.get(event.item.id);
          writing.delete(event.item.id);
          if (event.item.status !== "completed") {
            if (started) cutOff(started);
            continue;
          }
          if (!started) log.emit({ type: "item.started", turn_id: turn.id, item: callItem(event.item) });
          calls.push(event.item);
        } else if (event.type === "response.output_text.delta") {
          extend("agent_message", event.delta);
        } else if (event.type === "response.reasoning_text.delta") {
          extend("reasoning", event.delta);
        } else if (event.type === "response.created") {
          // A steered successor begins: what was said so far is one finished message.
          finish();
          guard = new RepetitionGuard();
          // The server calls its engine as it creates a response that is not queued.
          if (event.response.status !== "queued") await start(event.response.id);
        } else if (event.type === "response.in_progress") {
          await start(event.response.id);
        }
      }
      const response = await stream.final;
      chain.advance(response.id);
      return { response, calls };
    } catch (error) {
      for (const call of calls.splice(0)) {
        log.complete(turn.id, { ...callItem(call), status: "failed", output: NOT_APPLIED_FAILED });
      }
      throw error;
    } finally {
      turn.stream = null;
      turn.steers.streamEnded();
      finish();
      // Calls whose end never arrived (a cancel over HTTP ends the stream before their last event).
      for (const item of writing.values()) cutOff(item);
    }
  }

  /** Runs a call the model finished (its item has started) and completes its item. */
  private async runCall(turn: ActiveTurn, call: FunctionCall): Promise<ConversationInput> {
    const { tools, journal, log } = this.options;
    const item = callItem(call);
    const tool = tools.find((candidate) => candidate.name === call.name);
    const newestEdit = journal.newest;
    const result = !tool
      ? {
          output: `Unknown tool '${call.name}'. Available: ${tools.map((t) => t.name).join(", ")}.`,
          isError: true,
        }
      : turn.mode === "plan" && !runsInPlanMode(tool)
        ? { output: planModeRefusal(tool.name), isError: true }
        : await this.runHooked(turn, tool, call);
    // Name the edit this call recorded after it, so each file can be accepted or rejected later.
    const edit = journal.newest;
    if (edit && edit !== newestEdit) edit.id ??= call.call_id;
    log.complete(turn.id, {
      ...item,
      status: result.isError ? "failed" : "completed",
      output: result.output,
      ...("display" in result && result.display ? { display: result.display } : {}),
    });
    return { type: "function_call_output", call_id: call.call_id, output: result.output };
  }

  /** Runs the call's tool between its PreToolUse hooks (which may deny it) and its PostToolUse hooks. */
  private async runHooked(turn: ActiveTurn, tool: Tool, call: HookToolCall): Promise<ToolResult> {
    const hooks = this.options.hooks;
    if (!hooks) return runTool(tool, call.arguments, this.options.toolContext(turn));
    const denied = await hooks.beforeTool(turn, call);
    if (denied !== null) return { output: denied, isError: true };
    if (turn.controller.signal.aborted) return { output: NOT_RUN_INTERRUPTED, isError: true };
    const result = await runTool(tool, call.arguments, this.options.toolContext(turn));
    const feedback = await hooks.afterTool(turn, call, result);
    return feedback ? { ...result, output: result.output + feedback } : result;
  }

  /** The Stop hooks' next input for a turn about to end; null: it ends. */
  private stopHooks(turn: ActiveTurn, continued: number): Promise<string | null> {
    const hooks = this.options.hooks;
    if (!hooks) return Promise.resolve(null);
    const last = this.options.log.items.findLast((item) => item.type === "agent_message");
    return hooks.beforeStop(turn, last?.type === "agent_message" ? last.text : "", continued);
  }

  /** A finished call the interrupted turn does not run: its item fails, the model is told why. */
  private notRun(turn: ActiveTurn, call: FunctionCall): ConversationInput {
    return this.skip(turn, call, NOT_RUN_INTERRUPTED);
  }

  /** A finished call the turn does not run: its item ends failed with `output`, which the model reads too. */
  private skip(turn: ActiveTurn, call: FunctionCall, output: string): ConversationInput {
    this.options.log.complete(turn.id, { ...callItem(call), status: "failed", output });
    return { type: "function_call_output", call_id: call.call_id, output };
  }
}

const userMessage = (text: string): ConversationInput => ({ role: "user", content: text });

const rounds = (n: number) => (n === 1 ? "1 round" : `${n} rounds`);

function repetitionMessage(repetition: Repetition): string {
  const unit = JSON.stringify(repetition.unit.replaceAll("\u0000", ""));
  return (
    `Stopped: the model was repeating itself (${unit} ${repetition.repeats} times in a row). ` +
    "Send a message to steer it another way."
  );
}

/**
 * Counts `calls` into the run of identical calls (name and arguments) so far; the tool's name once
 * a call makes it {@link MAX_SAME_CALLS} long, else null.
 */
function repeatedCall(run: { key: string; count: number }, calls: readonly FunctionCall[]): string | null {
  for (const call of calls) {
    const key = `${call.name}\u0000${call.arguments}`;
    run.count = key === run.key ? run.count + 1 : 1;
    run.key = key;
    if (run.count >= MAX_SAME_CALLS) return call.name;
  }
  return null;
}

interface FunctionCall {
  call_id: string;
  name: string;
  arguments: string;
}

type ToolCallItem = Extract<ThreadItem, { type: "tool_call" }>;

/** A message or reasoning item as it streams. */
type StreamedText = Extract<ThreadItem, { type: "agent_message" | "reasoning" }>;

/** A call's tool_call item as it starts: running, named by the call's id. */
function callItem(call: FunctionCall): ToolCallItem {
  return {
    type: "tool_call",
    id: call.call_id,
    name: call.name,
    arguments: call.arguments,
    status: "running",
  };
}

const NOT_RUN_INTERRUPTED = "Aborted: the user interrupted, so the call was not run (nothing was applied).";
const NOT_APPLIED_CUT_OFF =
  "Not applied: the call was stopped before it was complete (interrupted or steered), so it was not run.";
const NOT_APPLIED_FAILED = "Not applied: the response failed, so the call was not run.";
const NOT_APPLIED_REPEATING =
  "Not applied: the model was repeating itself, so the call was stopped before it was complete and not run.";
const NOT_RUN_REPEATING =
  "Not run: the turn was stopped because the reply kept repeating itself. Say where you are; the person can let you go on.";
const NOT_RUN_CUT =
  "Not run: the reply reached its output limit, so the turn stopped. Say where you are; the person can let you go on.";
