import type { ConversationInput } from "./conversation-history.js";

/**
 * Where the thread's next request continues: the previous response (`previous_response_id`), or,
 * when the chain must start over (resume, `/model`, compaction), the conversation to resend.
 */
export class ResponseChain {
  private lastResponseId: string | null = null;
  /** The conversation to resend when the chain must start over. */
  private restart: ConversationInput[] | null;
  /** Tool calls the chain still owes outputs for (after an interrupt); they lead the next input. */
  owedOutputs: ConversationInput[] = [];
  /** Input and output tokens of the last response: the conversation's size, for compaction. */
  lastTokens = 0;
  /** Where the chain stood as each turn began, by the turn's user message id (for a rewind). */
  private readonly marks = new Map<string, ChainMark>();
  /** The kept conversation to resend if the response a rewind went back to is gone from the server. */
  private fallback: ConversationInput[] | null = null;

  constructor(restart: ConversationInput[] | null = null) {
    this.restart = restart;
  }

  /** The next request continues `response`. */
  advance(responseId: string): void {
    this.lastResponseId = responseId;
    this.fallback = null;
  }

  /** The next request starts a new chain with `conversation` resent. */
  startOver(conversation: ConversationInput[]): void {
    this.restart = conversation;
    this.lastResponseId = null;
    this.fallback = null;
  }

  /** Notes where the chain stands as the turn started by user message `itemId` sends its first request. */
  mark(itemId: string): void {
    this.marks.set(itemId, {
      lastResponseId: this.lastResponseId,
      restart: this.restart,
      owedOutputs: [...this.owedOutputs],
    });
  }

  /**
   * The conversation went back to before the turn started by `itemId`, keeping `kept` (the items
   * before it, as input). When the chain stood at a known point as that turn began, the next
   * request continues from there, so the server's engine finds that conversation's state and
   * reuses it up to the cut (a new chain would get a new conversation). Otherwise (a resumed
   * session, a steer mid-turn) the chain starts over with `kept` resent.
   */
  rewind(itemId: string, kept: ConversationInput[], cut: Iterable<string>): void {
    const mark = this.marks.get(itemId);
    for (const id of cut) this.marks.delete(id);
    if (!mark) {
      this.owedOutputs = [];
      this.startOver(kept);
      return;
    }
    this.lastResponseId = mark.lastResponseId;
    this.restart = mark.restart;
    this.owedOutputs = [...mark.owedOutputs];
    this.fallback = mark.lastResponseId ? kept : null;
  }

  /**
   * The response a rewind went back to is gone from the server (`previous_response_not_found`):
   * the chain starts over with the kept conversation. False when there is no such fallback.
   */
  fallBack(): boolean {
    const kept = this.fallback;
    if (!kept) return false;
    this.owedOutputs = [];
    this.startOver(kept);
    return true;
  }

  /**
   * The input and chain link of the next request, `input` after what must be resent. `consume`:
   * the request is sent, so the resent conversation is part of the chain from now on.
   */
  next(
    input: ConversationInput[],
    options: { consume: boolean },
  ): { input: ConversationInput[]; previous_response_id?: string } {
    const restart = this.restart;
    if (options.consume) this.restart = null;
    return {
      input: restart ? [...restart, ...input] : input,
      ...(restart || !this.lastResponseId ? {} : { previous_response_id: this.lastResponseId }),
    };
  }
}

interface ChainMark {
  lastResponseId: string | null;
  restart: ConversationInput[] | null;
  owedOutputs: ConversationInput[];
}
