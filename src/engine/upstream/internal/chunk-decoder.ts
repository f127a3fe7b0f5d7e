import type { ToolCall } from "../../../protocol/chat.js";
import type { EngineEvent, GenerateResult, StopReason } from "../../engine.js";
import type { ChatCompletionChunk } from "./chat-wire.js";

interface PartialCall {
  /** The upstream's id, else `call_<index>`; fixed once the call has started streaming. */
  id: string;
  name: string;
  arguments: string;
  started: boolean;
}

/**
 * Turns streamed Chat Completions chunks into engine events: text and reasoning
 * (`reasoning_content`, llama-server's and vLLM's field) at once; each tool call, by `index`, as
 * `tool_call_start` once its name has arrived (whole, in one chunk, as upstreams send it), then its
 * argument pieces as `tool_call_delta`, and whole as `tool_call` when the choice finishes; usage
 * from the final chunk. Timing is measured here, on arrival, since upstreams do not report it.
 */
export class ChunkDecoder {
  private readonly calls = new Map<number, PartialCall>();
  private callsEmitted = 0;
  private finishReason: string | null = null;
  private usage: ChatCompletionChunk["usage"] = null;
  /** Chunks that carried output: the output-token count when the upstream reports no usage. */
  private outputChunks = 0;
  private firstAt = 0;
  private lastAt = 0;

  constructor(
    private readonly started: number,
    /** Text is dropped (a pre-warm's token); usage still counts. */
    private readonly discardOutput = false,
  ) {}

  /** True once the choice has finished (its `finish_reason` arrived). */
  get finished(): boolean {
    return this.finishReason !== null;
  }

  /** The events one chunk yields (tool calls only once the choice finishes). */
  push(chunk: ChatCompletionChunk): EngineEvent[] {
    const events: EngineEvent[] = [];
    if (chunk.usage) this.usage = chunk.usage;
    const choice = chunk.choices?.find((c) => (c.index ?? 0) === 0);
    if (!choice) return events;
    const delta = choice.delta;
    const text = delta?.content;
    const reasoning = delta?.reasoning_content;
    if (text || reasoning || delta?.tool_calls?.length) this.tick();
    if (reasoning && !this.discardOutput) events.push({ type: "reasoning", text: reasoning });
    if (text && !this.discardOutput) events.push({ type: "text", text });
    for (const part of delta?.tool_calls ?? []) {
      const index = part.index ?? 0;
      let call = this.calls.get(index);
      if (!call) {
        call = { id: "", name: "", arguments: "", started: false };
        this.calls.set(index, call);
      }
      const piece = part.function?.arguments ?? "";
      call.arguments += piece;
      if (call.started) {
        if (piece && !this.discardOutput)
          events.push({ type: "tool_call_delta", callId: call.id, delta: piece });
        continue;
      }
      if (part.id) call.id = part.id;
      if (part.function?.name) call.name += part.function.name;
      if (!call.name || this.discardOutput) continue;
      call.id ||= `call_${index}`;
      call.started = true;
      events.push({ type: "tool_call_start", callId: call.id, name: call.name });
      if (call.arguments) events.push({ type: "tool_call_delta", callId: call.id, delta: call.arguments });
    }
    if (choice.finish_reason) {
      this.finishReason = choice.finish_reason;
      if (!this.discardOutput) events.push(...this.toolCallEvents());
    }
    return events;
  }

  /** Tool calls not emitted yet (a stream that ended without a finish reason). */
  flush(): EngineEvent[] {
    return this.discardOutput ? [] : this.toolCallEvents();
  }

  /** The result: the upstream's usage where reported, local counts and timing otherwise. */
  result(stopReason?: StopReason): GenerateResult {
    const end = performance.now();
    const usage = this.usage;
    const outputTokens = this.discardOutput ? 0 : (usage?.completion_tokens ?? this.outputChunks);
    const details = usage?.completion_tokens_details;
    return {
      stopReason: stopReason ?? this.stopReason(),
      usage: {
        inputTokens: usage?.prompt_tokens ?? 0,
        cachedInputTokens: usage?.prompt_tokens_details?.cached_tokens ?? 0,
        outputTokens,
        acceptedPredictionTokens: details?.accepted_prediction_tokens ?? 0,
        rejectedPredictionTokens: details?.rejected_prediction_tokens ?? 0,
      },
      timing: {
        // Upstreams do not say how long prefill took: up to the first token is the closest bound.
        promptMs: (this.firstAt || end) - this.started,
        firstTokenMs: (this.discardOutput ? end : this.firstAt || end) - this.started,
        decodeMs: this.firstAt && !this.discardOutput ? this.lastAt - this.firstAt : 0,
      },
    };
  }

  private stopReason(): StopReason {
    if (this.discardOutput) return "stop";
    if (this.finishReason === "length") return "length";
    if (this.callsEmitted > 0 || this.finishReason === "tool_calls" || this.finishReason === "function_call")
      return "tool_calls";
    return "stop";
  }

  private tick(): void {
    this.outputChunks++;
    this.lastAt = performance.now();
    if (this.firstAt === 0) this.firstAt = this.lastAt;
  }

  private toolCallEvents(): EngineEvent[] {
    const events: EngineEvent[] = [];
    const ordered = [...this.calls.entries()].sort(([a], [b]) => a - b);
    for (const [index, call] of ordered) {
      const toolCall: ToolCall = {
        callId: call.id || `call_${index}`,
        name: call.name,
        arguments: call.arguments,
      };
      events.push({ type: "tool_call", call: toolCall });
    }
    this.callsEmitted += this.calls.size;
    this.calls.clear();
    return events;
  }
}
