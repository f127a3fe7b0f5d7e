import type { DraftOutcomeWire } from "../protocol/responses.js";
import type { SparkDraftEvent } from "../protocol/responses-request.js";

/**
 * A type-ahead draft (`spark.draft`): the user message being typed (`draft`) with what the next
 * create will carry before it (`model`, `previous_response_id`, `instructions`, `tools`, `input`).
 */
export type DraftBody = Omit<SparkDraftEvent, "type">;

/**
 * How a draft ended. Besides the server's outcomes, `not_sent`: the transport carries no drafts
 * (HTTP/SSE) or the connection was not open; `failed` also covers a draft the server refused (an
 * `error` answer: unknown `previous_response_id`, too large, ...). Never rejects: a draft is a hint.
 */
export interface DraftAnswer {
  outcome: DraftOutcomeWire | "not_sent";
  prefixTokens: number;
  evaluatedTokens: number;
  error?: { code: string; message: string };
}

export const NOT_SENT: DraftAnswer = Object.freeze({
  outcome: "not_sent",
  prefixTokens: 0,
  evaluatedTokens: 0,
});
