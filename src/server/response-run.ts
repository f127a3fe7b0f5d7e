import type { Engine, GenerateResult } from "../engine/engine.js";
import { tokensPerSecond } from "../engine/engine.js";
import type { ChatMessage, ToolCall } from "../protocol/chat.js";
import { SparkError } from "../protocol/errors.js";
import type {
  FunctionCallOutputItem,
  IncompleteReason,
  MessageOutputItem,
  ReasoningOutputItem,
  ResponseObject,
  ResponseStreamEvent,
} from "../protocol/responses.js";
import { newId } from "./internal/ids.js";
import { historyOf, type ResponseSettings, type StoredResponse } from "./response-store.js";

/** A validated request, resolved against its chain, ready to run. */
export interface PreparedResponse {
  id: string;
  engine: Engine;
  parent: StoredResponse | null;
  /** This turn's new messages. */
  input: ChatMessage[];
  settings: ResponseSettings;
  conversation: string;
  /** false: evaluate the input into the conversation's state without generating. */
  generate: boolean;
}

export type AbortReason = Extract<IncompleteReason, "cancelled" | "steered">;

/** A place in admission control's queue that the run waits on, narrating its position. */
export interface QueuedTurn {
  /** 0 once admitted, else the place in the queue (1 = next). */
  readonly position: number;
  watch(listener: (position: number) => void): void;
  readonly ready: Promise<void>;
  /** Leaves the queue (the run calls it when aborted while waiting). */
  release(): void;
}

export interface ResponseRunOptions {
  /**
   * Wait for this turn before running: the response is created `queued`, a `response.queued`
   * event reports each place, then `response.in_progress` follows. Default: run at once.
   */
  queue?: QueuedTurn;
}

export interface RunOutcome {
  response: ResponseObject;
  /** The entry `previous_response_id` resolves to; null when the response failed. */
  stored: StoredResponse | null;
}

/** The conversation the engine is given for a prepared response: instructions, history, new input. */
export function promptMessages(
  prepared: Pick<PreparedResponse, "settings" | "parent" | "input">,
): ChatMessage[] {
  const { instructions } = prepared.settings;
  return [
    ...(instructions ? [{ role: "system" as const, content: instructions }] : []),
    ...historyOf(prepared.parent),
    ...prepared.input,
  ];
}

/**
 * Runs one response on an engine and narrates it as `response.*` events. Transport-agnostic: SSE,
 * WebSocket and plain JSON all use it. A failed run stores nothing, so a conversation is never
 * left half-written; a cancelled or steered one keeps what was streamed, as the client saw it.
 */
export class ResponseRun {
  readonly response: ResponseObject;
  private readonly controller = new AbortController();
  private abortReason: AbortReason | null = null;
  private message: { item: MessageOutputItem; index: number; text: string } | null = null;
  private reasoning: { item: ReasoningOutputItem; index: number; text: string } | null = null;
  private text = "";
  /** Calls the engine started and has not finished, by call id. */
  private readonly openCalls = new Map<string, OpenCall>();
  private readonly toolCalls: ToolCall[] = [];

  constructor(
    private readonly prepared: PreparedResponse,
    private readonly emit: (event: ResponseStreamEvent) => void,
    private readonly options: ResponseRunOptions = {},
  ) {
    const { settings } = prepared;
    this.response = {
      id: prepared.id,
      object: "response",
      created_at: Math.floor(Date.now() / 1000),
      status: "in_progress",
      error: null,
      incomplete_details: null,
      instructions: settings.instructions,
      max_output_tokens: settings.maxOutputTokens,
      model: prepared.engine.info.id,
      output: [],
      parallel_tool_calls: true,
      previous_response_id: prepared.parent?.id ?? null,
      temperature: settings.temperature,
      top_p: settings.topP,
      tool_choice: settings.toolChoice ?? "auto",
      tools: settings.rawTools,
      store: settings.store,
      text: { format: { type: "text" } },
      truncation: "disabled",
      metadata: settings.metadata,
      usage: null,
      timing: null,
    };
  }

  get id(): string {
    return this.prepared.id;
  }

  /** True once cancelled (not steered): it no longer accepts steering. */
  get cancelled(): boolean {
    return this.abortReason === "cancelled";
  }

  /** Stops decoding at the next token; the response ends `incomplete` with this reason. */
  abort(reason: AbortReason): void {
    if (this.abortReason) return;
    this.abortReason = reason;
    this.controller.abort();
  }

  /** The run's own signal: aborted by {@link abort}. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  async run(): Promise<RunOutcome> {
    const { prepared } = this;
    const started = performance.now();
    const queue = this.options.queue;
    if (queue && queue.position > 0) {
      this.response.status = "queued";
      this.emit({ type: "response.created", response: snapshot(this.response) });
      const refused = await this.waitForTurn(queue, started);
      if (refused) return refused;
      this.response.status = "in_progress";
    } else {
      this.emit({ type: "response.created", response: snapshot(this.response) });
    }
    this.emit({ type: "response.in_progress", response: snapshot(this.response) });
    const { settings } = prepared;
    const messages = promptMessages(prepared);
    let result: GenerateResult | undefined;
    try {
      const stream = prepared.engine.generate(
        {
          messages,
          tools: settings.tools,
          ...(settings.engineToolChoice && settings.engineToolChoice !== "auto"
            ? { toolChoice: settings.engineToolChoice }
            : {}),
          maxOutputTokens: settings.maxOutputTokens ?? undefined,
          temperature: settings.temperature ?? undefined,
          topP: settings.topP ?? undefined,
          prefillOnly: !prepared.generate,
          ...(settings.prediction ? { prediction: settings.prediction } : {}),
          // Agent turns (requests with tools) edit code already in context: draft from it.
          promptLookup: settings.tools.length > 0,
          conversation: prepared.conversation,
        },
        { signal: this.controller.signal },
      );
      for await (const event of stream) {
        switch (event.type) {
          case "text":
            this.onText(event.text);
            break;
          case "reasoning":
            this.onReasoning(event.text);
            break;
          case "tool_call_start":
            this.onCallStart(event.callId, event.name);
            break;
          case "tool_call_delta":
            this.onCallDelta(event.callId, event.delta);
            break;
          case "tool_call":
            this.onToolCall(event.call);
            break;
          case "done":
            result = event.result;
            break;
          default: {
            const unknown: never = event;
            throw new SparkError("server_error", `Unknown engine event ${JSON.stringify(unknown)}.`);
          }
        }
      }
    } catch (error) {
      return this.fail(SparkError.from(error));
    }
    if (!result) return this.fail(new SparkError("server_error", "The engine ended without a result."));
    this.closeOpenItems();
    return this.finish(result, performance.now() - started);
  }

  /**
   * Narrates the queue until the turn comes; an outcome when it never does (aborted: incomplete
   * with nothing generated; deadline or shutdown: failed with that error).
   */
  private async waitForTurn(queue: QueuedTurn, started: number): Promise<RunOutcome | null> {
    let waiting = true;
    const narrate = (position: number) => {
      if (waiting && position > 0) {
        this.emit({ type: "response.queued", response: snapshot(this.response), position });
      }
    };
    narrate(queue.position);
    queue.watch(narrate);
    const leave = () => queue.release();
    this.controller.signal.addEventListener("abort", leave, { once: true });
    if (this.controller.signal.aborted) leave();
    try {
      await queue.ready;
      return null;
    } catch (error) {
      if (!this.abortReason) return this.fail(SparkError.from(error));
      const none = { promptMs: 0, firstTokenMs: 0, decodeMs: 0 };
      const usage = {
        inputTokens: 0,
        cachedInputTokens: 0,
        outputTokens: 0,
        acceptedPredictionTokens: 0,
        rejectedPredictionTokens: 0,
      };
      return this.finish({ stopReason: "cancelled", usage, timing: none }, performance.now() - started);
    } finally {
      waiting = false;
      this.controller.signal.removeEventListener("abort", leave);
    }
  }

  private onText(text: string): void {
    this.closeReasoning();
    if (!this.message) {
      const item: MessageOutputItem = {
        type: "message",
        id: newId("msg"),
        status: "in_progress",
        role: "assistant",
        content: [],
      };
      const index = this.response.output.push(item) - 1;
      this.message = { item, index, text: "" };
      this.emit({ type: "response.output_item.added", output_index: index, item: snapshot(item) });
      this.emit({
        type: "response.content_part.added",
        item_id: item.id,
        output_index: index,
        content_index: 0,
        part: { type: "output_text", text: "", annotations: [], logprobs: [] },
      });
    }
    this.text += text;
    this.message.text += text;
    const { item, index } = this.message;
    this.emit({
      type: "response.output_text.delta",
      item_id: item.id,
      output_index: index,
      content_index: 0,
      delta: text,
      logprobs: [],
    });
  }

  /** Ends the open message item, if any, with the text streamed so far. */
  private closeMessage(): void {
    if (!this.message) return;
    const { item, index, text: messageText } = this.message;
    const part = { type: "output_text" as const, text: messageText, annotations: [], logprobs: [] };
    item.content = [part];
    item.status = this.abortReason ? "incomplete" : "completed";
    this.emit({
      type: "response.output_text.done",
      item_id: item.id,
      output_index: index,
      content_index: 0,
      text: messageText,
      logprobs: [],
    });
    this.emit({
      type: "response.content_part.done",
      item_id: item.id,
      output_index: index,
      content_index: 0,
      part,
    });
    this.emit({ type: "response.output_item.done", output_index: index, item: snapshot(item) });
    this.message = null;
  }

  private onReasoning(text: string): void {
    this.closeMessage();
    if (!this.reasoning) {
      const item: ReasoningOutputItem = {
        type: "reasoning",
        id: newId("rs"),
        status: "in_progress",
        summary: [],
        content: [],
      };
      const index = this.response.output.push(item) - 1;
      this.reasoning = { item, index, text: "" };
      this.emit({ type: "response.output_item.added", output_index: index, item: snapshot(item) });
      this.emit({
        type: "response.content_part.added",
        item_id: item.id,
        output_index: index,
        content_index: 0,
        part: { type: "reasoning_text", text: "" },
      });
    }
    this.reasoning.text += text;
    const { item, index } = this.reasoning;
    this.emit({
      type: "response.reasoning_text.delta",
      item_id: item.id,
      output_index: index,
      content_index: 0,
      delta: text,
    });
  }

  /** Ends the open reasoning item, if any, with the text streamed so far. */
  private closeReasoning(): void {
    if (!this.reasoning) return;
    const { item, index, text } = this.reasoning;
    const part = { type: "reasoning_text" as const, text };
    item.content = [part];
    item.status = this.abortReason ? "incomplete" : "completed";
    const at = { item_id: item.id, output_index: index, content_index: 0 };
    this.emit({ type: "response.reasoning_text.done", ...at, text });
    this.emit({ type: "response.content_part.done", ...at, part });
    this.emit({ type: "response.output_item.done", output_index: index, item: snapshot(item) });
    this.reasoning = null;
  }

  /** A new function_call item, `in_progress` with no arguments yet. */
  private openCall(callId: string, name: string): OpenCall {
    this.closeMessage();
    this.closeReasoning();
    const item: FunctionCallOutputItem = {
      type: "function_call",
      id: newId("fc"),
      status: "in_progress",
      call_id: callId,
      name,
      arguments: "",
    };
    const index = this.response.output.push(item) - 1;
    this.emit({ type: "response.output_item.added", output_index: index, item: snapshot(item) });
    return { item, index };
  }

  private onCallStart(callId: string, name: string): void {
    if (this.openCalls.has(callId))
      throw new SparkError("server_error", `The engine started call '${callId}' twice.`);
    this.openCalls.set(callId, this.openCall(callId, name));
  }

  private onCallDelta(callId: string, delta: string): void {
    const call = this.openCalls.get(callId);
    if (!call)
      throw new SparkError("server_error", `The engine streamed arguments of an unknown call '${callId}'.`);
    call.item.arguments += delta;
    this.emit({
      type: "response.function_call_arguments.delta",
      item_id: call.item.id,
      output_index: call.index,
      delta,
    });
  }

  /** A finished call: the one that streamed under its id, or a whole call sent at once. */
  private onToolCall(call: ToolCall): void {
    let open = this.openCalls.get(call.callId);
    this.openCalls.delete(call.callId);
    if (!open) {
      open = this.openCall(call.callId, call.name);
      this.emit({
        type: "response.function_call_arguments.delta",
        item_id: open.item.id,
        output_index: open.index,
        delta: call.arguments,
      });
    }
    const { item, index } = open;
    this.emit({
      type: "response.function_call_arguments.done",
      item_id: item.id,
      output_index: index,
      name: call.name,
      arguments: call.arguments,
    });
    item.arguments = call.arguments;
    item.status = "completed";
    this.emit({ type: "response.output_item.done", output_index: index, item: snapshot(item) });
    this.toolCalls.push(call);
  }

  /**
   * Ends every item still open. A call the engine never finished (a cancelled or cut-off stream)
   * ends `incomplete` with the arguments streamed so far; it is not part of the conversation, so no
   * output is owed for it and nobody should run it.
   */
  private closeOpenItems(): void {
    this.closeMessage();
    this.closeReasoning();
    for (const { item, index } of this.openCalls.values()) {
      item.status = "incomplete";
      this.emit({ type: "response.output_item.done", output_index: index, item: snapshot(item) });
    }
    this.openCalls.clear();
  }

  private finish(result: GenerateResult, totalMs: number): RunOutcome {
    const { usage, timing } = result;
    const response = this.response;
    response.usage = {
      input_tokens: usage.inputTokens,
      input_tokens_details: { cached_tokens: usage.cachedInputTokens },
      output_tokens: usage.outputTokens,
      output_tokens_details: {
        reasoning_tokens: 0,
        accepted_prediction_tokens: usage.acceptedPredictionTokens,
        rejected_prediction_tokens: usage.rejectedPredictionTokens,
      },
      total_tokens: usage.inputTokens + usage.outputTokens,
    };
    response.timing = {
      time_to_first_token_ms: round(timing.firstTokenMs),
      tokens_per_second: round(tokensPerSecond(result)),
      prompt_ms: round(timing.promptMs),
      total_ms: round(totalMs),
    };
    if (result.stopReason === "cancelled") {
      response.status = "incomplete";
      response.incomplete_details = { reason: this.abortReason ?? "cancelled" };
    } else if (result.stopReason === "length") {
      response.status = "incomplete";
      response.incomplete_details = { reason: "max_output_tokens" };
    } else {
      response.status = "completed";
    }
    const type = response.status === "completed" ? "response.completed" : "response.incomplete";
    this.emit({ type, response: snapshot(response) });

    const output: ChatMessage[] = [];
    if (this.text || this.toolCalls.length > 0) {
      output.push({
        role: "assistant",
        content: this.text,
        ...(this.toolCalls.length ? { toolCalls: [...this.toolCalls] } : {}),
      });
    }
    const stored: StoredResponse = {
      id: response.id,
      parent: this.prepared.parent,
      messages: [...this.prepared.input, ...output],
      conversation: this.prepared.conversation,
      model: response.model,
      settings: this.prepared.settings,
      pendingCalls: this.toolCalls.map((call) => ({ callId: call.callId, name: call.name })),
    };
    return { response, stored };
  }

  private fail(error: SparkError): RunOutcome {
    this.closeOpenItems();
    this.response.status = "failed";
    this.response.error = error.toWire();
    this.emit({ type: "response.failed", response: snapshot(this.response) });
    return { response: this.response, stored: null };
  }
}

interface OpenCall {
  item: FunctionCallOutputItem;
  index: number;
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

/** Events carry a copy: the live object keeps changing after the event is sent. */
function snapshot<T>(value: T): T {
  return structuredClone(value);
}
