/**
 * Wire shapes Spark sends for the Responses API: the response object, its output items and the
 * `response.*` stream events. Field names follow the official `openai` package's declarations.
 */
import type { WireError } from "./errors.js";
import type { TextFormat } from "./output-format.js";

export type ResponseStatus = "queued" | "in_progress" | "completed" | "incomplete" | "failed" | "cancelled";

/** Why a response stopped early. `cancelled` and `steered` are Spark's WebSocket-mode reasons. */
export type IncompleteReason = "max_output_tokens" | "cancelled" | "steered";

export interface OutputText {
  type: "output_text";
  text: string;
  annotations: never[];
  logprobs: never[];
}

export interface MessageOutputItem {
  type: "message";
  id: string;
  status: "in_progress" | "completed" | "incomplete";
  role: "assistant";
  content: OutputText[];
}

export interface FunctionCallOutputItem {
  type: "function_call";
  id: string;
  status: "in_progress" | "completed" | "incomplete";
  call_id: string;
  name: string;
  arguments: string;
}

/** Reasoning text, as `reasoning_text` content parts of a `reasoning` output item. */
export interface ReasoningText {
  type: "reasoning_text";
  text: string;
}

/** What a reasoning model thought before answering (Qwen3's `<think>`, gpt-oss's analysis). */
export interface ReasoningOutputItem {
  type: "reasoning";
  id: string;
  status: "in_progress" | "completed" | "incomplete";
  /** Spark streams the reasoning itself, never a summary. */
  summary: never[];
  content: ReasoningText[];
}

export type OutputItem = MessageOutputItem | FunctionCallOutputItem | ReasoningOutputItem;

export interface ResponseUsage {
  input_tokens: number;
  input_tokens_details: {
    cached_tokens: number;
    /**
     * Spark's own, present (true) only when the turn continued a chain this server did not run (it
     * came from the shared store): the history missing from its KV cache was evaluated again.
     */
    chain_recomputed?: true;
  };
  output_tokens: number;
  output_tokens_details: {
    reasoning_tokens: number;
    /** Predicted Outputs (and prompt-lookup drafts): draft tokens that became output. */
    accepted_prediction_tokens: number;
    rejected_prediction_tokens: number;
  };
  total_tokens: number;
}

/** Spark's own addition: where the time went, so every client can show a live meter. */
export interface ResponseTiming {
  /** From the request arriving to the first output token (or to the end of prefill). */
  time_to_first_token_ms: number;
  /** Output tokens per second after the first one. */
  tokens_per_second: number;
  prompt_ms: number;
  total_ms: number;
}

export interface ResponseObject {
  id: string;
  object: "response";
  created_at: number;
  status: ResponseStatus;
  error: WireError | null;
  incomplete_details: { reason: IncompleteReason } | null;
  instructions: string | null;
  max_output_tokens: number | null;
  model: string;
  output: OutputItem[];
  parallel_tool_calls: boolean;
  previous_response_id: string | null;
  temperature: number | null;
  top_p: number | null;
  tool_choice: unknown;
  tools: unknown[];
  store: boolean;
  /** `text.format` as the request sent it; `{type: "text"}` without one. */
  text: { format: TextFormat };
  truncation: "disabled";
  metadata: Record<string, string>;
  usage: ResponseUsage | null;
  timing: ResponseTiming | null;
}

/** Every server event, without the `sequence_number` the transport stamps on it. */
export type ResponseStreamEvent =
  | { type: "response.created"; response: ResponseObject }
  | { type: "response.in_progress"; response: ResponseObject }
  /**
   * The response waits for capacity (admission control). Sent after `response.created` (status
   * `queued`) and again whenever its place changes; `response.in_progress` follows once it runs.
   * `position` is Spark's addition: 1 means next to run.
   */
  | { type: "response.queued"; response: ResponseObject; position: number }
  /**
   * Spark's addition, sent only for a pre-warm (`generate: false`): the prompt tokens evaluated so
   * far (`evaluated_tokens`, never decreasing) of the `total_tokens` this response evaluates (those
   * not already cached). The last one of a complete pre-warm has them equal.
   */
  | {
      type: "response.prefill.progress";
      response_id: string;
      evaluated_tokens: number;
      total_tokens: number;
    }
  | { type: "response.output_item.added"; output_index: number; item: OutputItem }
  | { type: "response.output_item.done"; output_index: number; item: OutputItem }
  | {
      type: "response.content_part.added" | "response.content_part.done";
      item_id: string;
      output_index: number;
      content_index: number;
      part: OutputText | ReasoningText;
    }
  | {
      type: "response.output_text.delta";
      item_id: string;
      output_index: number;
      content_index: number;
      delta: string;
      logprobs: never[];
    }
  | {
      type: "response.output_text.done";
      item_id: string;
      output_index: number;
      content_index: number;
      text: string;
      logprobs: never[];
    }
  | {
      type: "response.reasoning_text.delta";
      item_id: string;
      output_index: number;
      content_index: number;
      delta: string;
    }
  | {
      type: "response.reasoning_text.done";
      item_id: string;
      output_index: number;
      content_index: number;
      text: string;
    }
  /** A function call's arguments as the model writes them; their concatenation is the arguments. */
  | { type: "response.function_call_arguments.delta"; item_id: string; output_index: number; delta: string }
  | {
      type: "response.function_call_arguments.done";
      item_id: string;
      output_index: number;
      name: string;
      arguments: string;
    }
  | { type: "response.completed" | "response.incomplete" | "response.failed"; response: ResponseObject }
  | { type: "response.steer.accepted"; steer: SteerRef }
  | {
      type: "response.steer.pending";
      reason: "waiting_for_required_input";
      required_input: { type: "function_call_output"; call_id: string; name: string }[];
      steer: SteerRef;
    }
  | {
      type: "response.steer.failed";
      error: { type: "invalid_request_error"; code: SteerErrorCode; message: string };
      steer: { id?: string; previous_response_id: string; input: unknown };
    }
  /** `status` is the HTTP status of the error, as the SDK's `ResponseWsError` has it. */
  | { type: "error"; status: number; error: WireError }
  | { type: "spark.draft.accepted"; draft_id: string }
  | {
      type: "spark.draft.done";
      draft_id: string;
      outcome: DraftOutcomeWire;
      /** Tokens of the draft's stable prefix; of those, the ones this draft evaluated. */
      prefix_tokens: number;
      evaluated_tokens: number;
      /** With `failed`: why (e.g. `context_length_exceeded`). */
      error?: WireError;
    };

/**
 * How a `spark.draft` ended: `evaluated` (its stable prefix is in the conversation's state),
 * `cancelled` (by a `response.create` or the connection closing), `superseded` (by a newer draft),
 * `busy` (not run: the model was serving requests), `ignored` (the engine keeps no state to warm),
 * `failed` (the engine could not evaluate it; `error` says why).
 */
export type DraftOutcomeWire = "evaluated" | "cancelled" | "superseded" | "busy" | "ignored" | "failed";

export interface SteerRef {
  id: string;
  previous_response_id: string;
}

export type SteerErrorCode =
  | "response_not_found"
  | "invalid_input"
  | "response_already_completed"
  | "response_not_active"
  | "successor_creation_failed";

/**
 * An event as it goes on the wire: with its `sequence_number`, and with `stream_id` when the
 * response it belongs to was created on a lane (errors about a lane's request too).
 */
export type SequencedEvent = ResponseStreamEvent & { sequence_number: number; stream_id?: string };
