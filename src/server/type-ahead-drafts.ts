import type { DraftRequest, Engine } from "../engine/engine.js";
import type { ChatMessage } from "../protocol/chat.js";
import { SparkError } from "../protocol/errors.js";
import type { DraftOutcomeWire, ResponseStreamEvent } from "../protocol/responses.js";
import type { ResponseCreateBody, SparkDraftEvent } from "../protocol/responses-request.js";
import { newId } from "./internal/ids.js";
import { prepareResponse } from "./prepare-response.js";
import { promptMessages } from "./response-run.js";
import type { StoredResponse } from "./response-store.js";

/** A validated `spark.draft`, resolved against its chain. */
export interface PreparedDraft {
  id: string;
  engine: Engine;
  request: DraftRequest;
}

export interface PrepareDraftOptions {
  engine: Engine;
  /** Finds the response `previous_response_id` names. */
  lookup: (id: string) => StoredResponse | undefined;
  /** Messages the following create would put before its own input (queued steering input). */
  prepend?: ChatMessage[];
}

/**
 * Resolves a draft exactly as the `response.create` it anticipates would be resolved (same
 * validation, chain lookup and message assembly), with the draft as the user's last message.
 * Throws what that create would throw (`previous_response_not_found`, `invalid_request`, ...).
 */
export function prepareDraft(event: SparkDraftEvent, options: PrepareDraftOptions): PreparedDraft {
  const body: ResponseCreateBody = {
    model: event.model ?? undefined,
    instructions: event.instructions,
    previous_response_id: event.previous_response_id,
    tools: event.tools,
    input: [...(event.input ?? []), { role: "user", content: event.draft }],
  };
  const prepared = prepareResponse(body, { ...options, generate: false });
  const messages = promptMessages(prepared);
  messages.pop();
  return {
    id: newId("draft"),
    engine: options.engine,
    request: {
      messages,
      text: event.draft,
      tools: prepared.settings.tools,
      // A new conversation has no sequence yet: its draft lands where its prompt matches best.
      ...(prepared.parent ? { conversation: prepared.conversation } : {}),
    },
  };
}

/**
 * One connection's drafts: at most one evaluation in flight; a newer draft replaces the one
 * waiting and stops the one running (`superseded`); a real request stops both (`cancelled`).
 * Every accepted draft is answered by exactly one `spark.draft.done`.
 */
export class TypeAheadDrafts {
  private running: { draft: PreparedDraft; controller: AbortController; superseded: boolean } | null = null;
  private waiting: PreparedDraft | null = null;

  constructor(private readonly emit: (event: ResponseStreamEvent) => void) {}

  submit(draft: PreparedDraft): void {
    if (this.waiting) this.done(this.waiting, "superseded");
    this.waiting = draft;
    if (this.running) {
      this.running.superseded = true;
      this.running.controller.abort();
    } else this.next();
  }

  /** A real request (or the connection's end): stop the running draft, drop the waiting one. */
  cancel(): void {
    if (this.waiting) this.done(this.waiting, "cancelled");
    this.waiting = null;
    this.running?.controller.abort();
  }

  /** Answers a draft that is not run at all. */
  skip(draft: PreparedDraft, outcome: "busy"): void {
    this.done(draft, outcome);
  }

  private next(): void {
    const draft = this.waiting;
    if (!draft) return;
    this.waiting = null;
    const running = { draft, controller: new AbortController(), superseded: false };
    this.running = running;
    void draft.engine
      .draft(draft.request, { signal: running.controller.signal })
      .then(
        (result) => {
          const outcome =
            result.outcome === "cancelled" && running.superseded ? "superseded" : result.outcome;
          this.done(draft, outcome, result.prefixTokens, result.evaluatedTokens);
        },
        (error: unknown) => this.done(draft, "failed", 0, 0, SparkError.from(error)),
      )
      .finally(() => {
        this.running = null;
        this.next();
      });
  }

  private done(
    draft: PreparedDraft,
    outcome: DraftOutcomeWire,
    prefixTokens = 0,
    evaluatedTokens = 0,
    error?: SparkError,
  ): void {
    this.emit({
      type: "spark.draft.done",
      draft_id: draft.id,
      outcome,
      prefix_tokens: prefixTokens,
      evaluated_tokens: evaluatedTokens,
      ...(error ? { error: error.toWire() } : {}),
    });
  }
}
