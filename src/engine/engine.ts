import type { ChatMessage, ToolCall, ToolChoice, ToolDefinition } from "../protocol/chat.js";
import type { OutputFormat } from "../protocol/output-format.js";

/** One generation: the whole conversation so far, rendered by the engine with its own template. */
export interface GenerateRequest {
  messages: ChatMessage[];
  tools?: ToolDefinition[];
  /**
   * `"auto"`: the model decides whether to call; `"required"`: it must call one of `tools`; a name:
   * it must call that tool. (`"none"` never reaches an engine: the server then sends no tools.)
   * Default: `"auto"`.
   */
  toolChoice?: ToolChoice;
  /**
   * Structured output: the answer is JSON of this schema (or any JSON object). The embedded engine
   * generates it under a grammar from the first token (a call, where tools are offered, stays
   * possible); an upstream receives it as `response_format`. Default: free text.
   */
  format?: OutputFormat;
  /** Stop after this many output tokens. Default: the rest of the context window. */
  maxOutputTokens?: number;
  /** 0 is greedy. Default: 0. */
  temperature?: number;
  /** Nucleus sampling. Default: 1 (off). */
  topP?: number;
  seed?: number;
  /** Texts that end the output (not included in it). Default: none beyond the template's own. */
  stop?: string[];
  /**
   * Predicted Outputs: text the output is expected to mostly repeat (the file being edited). The
   * engine verifies it as draft tokens, many per forward pass; with greedy decoding the output is
   * exactly what it would be without it, only sooner. Default: none.
   */
  prediction?: string;
  /**
   * Draft from the conversation itself when there is no prediction (prompt lookup): edits copy
   * text already in context. Default: false.
   */
  promptLookup?: boolean;
  /**
   * Evaluate the conversation into the engine's state and stop without generating (`generate: false`
   * pre-warm). Default: false.
   */
  prefillOnly?: boolean;
  /**
   * The conversation this belongs to. An engine with a KV cache keeps each conversation's state
   * where it can, so its next turn evaluates only new tokens. Default: none (best prefix match).
   */
  conversation?: string;
}

export interface GenerateOptions {
  /** Aborting stops prefill within one chunk and decoding within one token; the stream then ends normally with `stopReason: "cancelled"`. */
  signal?: AbortSignal;
  /** Called after each prefill chunk with the input tokens evaluated so far and the total to evaluate. */
  onPrefillProgress?: (evaluated: number, total: number) => void;
}

export type StopReason = "stop" | "length" | "tool_calls" | "cancelled";

export interface TokenUsage {
  inputTokens: number;
  /** Input tokens whose KV state was reused rather than evaluated. */
  cachedInputTokens: number;
  outputTokens: number;
  /** Draft tokens (from a prediction, prompt lookup or a draft model) that became output. */
  acceptedPredictionTokens: number;
  /** Draft tokens that were checked and did not match. */
  rejectedPredictionTokens: number;
}

export interface GenerateTiming {
  /** Evaluating the new input tokens (prefill). */
  promptMs: number;
  /** From the call to the first output token; equals the whole call when nothing was generated. */
  firstTokenMs: number;
  /** From the first to the last output token. */
  decodeMs: number;
}

export interface GenerateResult {
  stopReason: StopReason;
  usage: TokenUsage;
  timing: GenerateTiming;
}

/**
 * A stream of text, reasoning and function calls. A call may stream: `tool_call_start` (its id and
 * name), then `tool_call_delta`s whose concatenation is exactly its arguments, then `tool_call`
 * with the whole call under the same id. An engine that cannot stream a call sends `tool_call`
 * alone. A started call always completes unless the stream is cancelled (then it ends without a
 * `tool_call`, and the partial call must not be acted on).
 */
export type EngineEvent =
  | { type: "text"; text: string }
  | { type: "reasoning"; text: string }
  | { type: "tool_call_start"; callId: string; name: string }
  | { type: "tool_call_delta"; callId: string; delta: string }
  | { type: "tool_call"; call: ToolCall }
  | { type: "done"; result: GenerateResult };

export interface EngineInfo {
  /** The model id clients name in `model`. */
  id: string;
  engine: "llama" | "scripted" | "upstream";
  /** Tokens one conversation can hold. */
  contextSize: number;
}

/**
 * Type-ahead: the message a person is still typing, with the conversation the next request would
 * send. An engine with a KV cache evaluates the part that can no longer change into the
 * conversation's state, so the real request finds it cached. It never changes what a later request
 * is given; an engine without a cache ignores it.
 */
export interface DraftRequest {
  /** The conversation so far, as the next request would render it, without the draft. */
  messages: ChatMessage[];
  /** The user message being typed. */
  text: string;
  tools?: ToolDefinition[];
  /** The conversation the next request continues. Default: none (best prefix match). */
  conversation?: string;
}

export interface DraftOptions {
  /** Aborting stops the evaluation within one chunk; the result is then `cancelled`. */
  signal?: AbortSignal;
}

/**
 * `evaluated`: the stable prefix is in the conversation's state; `cancelled`: stopped by a real
 * request or the signal; `busy`: not run, because the model was serving real requests; `ignored`:
 * the engine keeps no state to warm.
 */
export type DraftOutcome = "evaluated" | "cancelled" | "busy" | "ignored";

export interface DraftResult {
  outcome: DraftOutcome;
  /** Tokens of the draft's stable prefix (the rendered conversation up to the settled text). */
  prefixTokens: number;
  /** Of those, tokens this draft evaluated (the rest were already in the state). */
  evaluatedTokens: number;
}

/** The result of an engine that ignores drafts. */
export const IGNORED_DRAFT: DraftResult = Object.freeze({
  outcome: "ignored",
  prefixTokens: 0,
  evaluatedTokens: 0,
});

/**
 * Runs a model. Every engine (llama, scripted, upstream) implements this and passes the same
 * conformance suite. A stream always ends with exactly one `done` event unless it throws; breaking
 * out of the loop cancels the generation.
 */
export interface Engine extends AsyncDisposable {
  readonly info: EngineInfo;
  generate(request: GenerateRequest, options?: GenerateOptions): AsyncGenerator<EngineEvent, void, undefined>;
  /**
   * Type-ahead prefill, lowest priority: never waits for a busy model, and any `generate` call
   * stops it (within one chunk) before it runs.
   */
  draft(request: DraftRequest, options?: DraftOptions): Promise<DraftResult>;
  dispose(): Promise<void>;
}

/** Tokens per second over a decode span; the first token's time is not counted (it is TTFT). */
export function tokensPerSecond(result: GenerateResult): number {
  const decoded = result.usage.outputTokens - 1;
  if (decoded <= 0 || result.timing.decodeMs <= 0) return 0;
  return (decoded * 1000) / result.timing.decodeMs;
}
