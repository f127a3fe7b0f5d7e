import type { Engine, GenerateResult } from "../engine/engine.js";
import { tokensPerSecond } from "../engine/engine.js";
import type { ChatMessage } from "../protocol/chat.js";
import { SparkError } from "../protocol/errors.js";
import type { IncompleteReason, ResponseObject, ResponseStreamEvent } from "../protocol/responses.js";
import { snapshot } from "./internal/snapshot.js";
import { ResponseOutput } from "./response-output.js";
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
  /** The chain was run by another server (shared store): its KV state is recomputed here. */
  chainRecomputed?: boolean;
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
  /** The engine has said how the reply ended (or the run failed): nothing is left to steer. */
  private ended = false;
  /** The output items the engine's events build. */
  private readonly output: ResponseOutput;

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
      text: { format: settings.textFormat ?? { type: "text" } },
      truncation: "disabled",
      metadata: settings.metadata,
      usage: null,
      timing: null,
    };
    this.output = new ResponseOutput(this.response.output, emit, () => this.abortReason !== null);
  }

  get id(): string {
    return this.prepared.id;
  }

  /**
   * Whether a steer can still end this response `incomplete` (`steered`) and continue it: not once
   * cancelled, nor once the engine reported the reply's end. The engine may still be cleaning up
   * then (the run ends a few event-loop turns later), and a steer accepted in that window would
   * be answered with a response that completed on its own.
   */
  get steerable(): boolean {
    return this.abortReason !== "cancelled" && !this.ended;
  }

  /**
   * Stops decoding at the next token; the response ends `incomplete` with this reason. A cancel
   * after a steer wins (the steer is answered as failed by whoever cancels): the reason is
   * `cancelled`.
   */
  abort(reason: AbortReason): void {
    if (this.abortReason === reason || this.abortReason === "cancelled") return;
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
          ...(settings.format ? { format: settings.format } : {}),
          maxOutputTokens: settings.maxOutputTokens ?? undefined,
          temperature: settings.temperature ?? undefined,
          topP: settings.topP ?? undefined,
          prefillOnly: !prepared.generate,
          ...(settings.prediction ? { prediction: settings.prediction } : {}),
          // Agent turns (requests with tools) edit code already in context: draft from it.
          promptLookup: settings.tools.length > 0,
          conversation: prepared.conversation,
        },
        {
          signal: this.controller.signal,
          ...(prepared.generate ? {} : { onPrefillProgress: this.prefillProgress() }),
        },
      );
      for await (const event of stream) {
        switch (event.type) {
          case "text":
            this.output.appendText(event.text);
            break;
          case "reasoning":
            this.output.appendReasoning(event.text);
            break;
          case "tool_call_start":
            this.output.startCall(event.callId, event.name);
            break;
          case "tool_call_delta":
            this.output.appendArguments(event.callId, event.delta);
            break;
          case "tool_call":
            this.output.finishCall(event.call);
            break;
          case "done":
            result = event.result;
            this.ended = true;
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
    this.output.close();
    return this.finish(result, performance.now() - started);
  }

  /** Narrates a pre-warm's prompt evaluation: `response.prefill.progress`, never going back. */
  private prefillProgress(): (evaluated: number, total: number) => void {
    let last = -1;
    return (evaluated, total) => {
      if (evaluated <= last || this.ended) return;
      last = evaluated;
      this.emit({
        type: "response.prefill.progress",
        response_id: this.response.id,
        evaluated_tokens: evaluated,
        total_tokens: total,
      });
    };
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

  private finish(result: GenerateResult, totalMs: number): RunOutcome {
    const { usage, timing } = result;
    const response = this.response;
    response.usage = {
      input_tokens: usage.inputTokens,
      input_tokens_details: {
        cached_tokens: usage.cachedInputTokens,
        ...(this.prepared.chainRecomputed ? { chain_recomputed: true as const } : {}),
      },
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
    // Steered just as the reply ended by itself (at the same token): it still ends as steered, since
    // the steer was accepted and its successor follows. Finished calls keep it complete: they wait
    // for their outputs (`response.steer.pending`).
    const steered =
      this.abortReason === "steered" && (result.stopReason === "stop" || result.stopReason === "length");
    if (result.stopReason === "cancelled" || steered) {
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

    const { answer, toolCalls } = this.output;
    const output: ChatMessage[] = [];
    if (answer || toolCalls.length > 0) {
      output.push({
        role: "assistant",
        content: answer,
        ...(toolCalls.length ? { toolCalls: [...toolCalls] } : {}),
      });
    }
    const stored: StoredResponse = {
      id: response.id,
      parent: this.prepared.parent,
      messages: [...this.prepared.input, ...output],
      conversation: this.prepared.conversation,
      model: response.model,
      settings: this.prepared.settings,
      pendingCalls: toolCalls.map((call) => ({ callId: call.callId, name: call.name })),
    };
    return { response, stored };
  }

  private fail(error: SparkError): RunOutcome {
    this.ended = true;
    this.output.close();
    this.response.status = "failed";
    this.response.error = error.toWire();
    this.emit({ type: "response.failed", response: snapshot(this.response) });
    return { response: this.response, stored: null };
  }
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}
