import type { ResponseObject, SequencedEvent } from "../protocol/responses.js";

/**
 * A server event as it arrives: a `response.*` stream event (or `error`, or a steer answer) with
 * its `sequence_number`. Events of types Spark does not send (from other servers) pass through
 * unchanged, so a `switch` over `type` needs a default branch that ignores them.
 */
export type ServerEvent = SequencedEvent;

/**
 * One response and the successors steering gives it, as one stream of events. Iterate it once;
 * breaking out of the loop cancels the response. Events the consumer has not read yet are kept.
 *
 * A function call arrives as the model writes it: `response.output_item.added` (the call,
 * `in_progress`, no arguments), `response.function_call_arguments.delta`s (their concatenation is
 * the arguments), then `response.function_call_arguments.done` and `response.output_item.done`
 * with `status: "completed"`. A call cut off (cancel, steer) ends `incomplete`, in the stream and in
 * {@link final}'s output, and must not be run. Reasoning streams as `response.reasoning_text.delta`.
 */
export interface ResponseStream extends AsyncIterable<ServerEvent> {
  /**
   * The id of the response streaming now: undefined until the first `response.created`, then that
   * response's id, then each steered successor's.
   */
  readonly responseId: string | undefined;
  /** Every response id of the chain so far, oldest first. */
  readonly responseIds: readonly string[];
  /**
   * The first response as its `response.created` showed it (id, model, settings). Rejects like
   * {@link final} when the request fails before that.
   */
  readonly started: Promise<ResponseObject>;
  /**
   * The last response of the chain once it ends: `completed`, or `incomplete` with
   * `incomplete_details.reason` (`max_output_tokens`, `cancelled`, or `steered` when a steer is
   * waiting for tool outputs). Rejects with a `ClientError` on `response.failed`, an `error` event
   * for the request, a protocol error or a lost connection.
   */
  readonly final: Promise<ResponseObject>;
  /** Whether {@link final} has settled. */
  readonly done: boolean;
  /**
   * Stops decoding: `response.cancel` over WebSocket, aborting the request over HTTP. The stream
   * then ends with the response `incomplete` (reason `cancelled`). Idempotent; a no-op once done.
   */
  cancel(): void;
}
