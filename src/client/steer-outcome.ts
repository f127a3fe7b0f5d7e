/** Codes a steer fails with: the server's `response.steer.failed` codes, or a wire error's. */
export type SteerFailureCode =
  | "response_not_found"
  | "invalid_input"
  | "response_already_completed"
  | "response_not_active"
  | "successor_creation_failed"
  | "connection_lost"
  | "client_closed"
  | (string & {});

/**
 * What became of a steer.
 * - `accepted`: the running response stops at the next token and a successor continues with the
 *   input; the same stream yields the successor's events.
 * - `pending`: the response is waiting for tool outputs; the server adds the steer input to the
 *   next `response.create` that chains from it (over HTTP the caller must send it).
 * - `failed`: nothing was steered (for example the response had already completed).
 */
export type SteerOutcome =
  | {
      status: "accepted";
      /** The server's steer id (WebSocket) or the successor's response id (HTTP). */
      id: string;
    }
  | {
      status: "pending";
      requiredInput: { type: "function_call_output"; call_id: string; name: string }[];
    }
  | { status: "failed"; code: SteerFailureCode; message: string };
