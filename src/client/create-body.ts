import type { ResponseCreateBody } from "../protocol/responses-request.js";

/**
 * The Responses create body (`model`, `input`, `instructions`, `tools`, `previous_response_id`,
 * `max_output_tokens`, `temperature`, `store`, ...) plus WebSocket mode's `generate`.
 * `stream` is ignored: the client always streams.
 */
export type CreateBody = ResponseCreateBody & {
  /**
   * `false` evaluates the input into the conversation's state and returns a response with no output
   * (pre-warm). Default: true.
   */
  generate?: boolean | null;
};
