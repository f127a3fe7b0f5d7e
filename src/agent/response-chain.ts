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

  constructor(restart: ConversationInput[] | null = null) {
    this.restart = restart;
  }

  /** The next request continues `response`. */
  advance(responseId: string): void {
    this.lastResponseId = responseId;
  }

  /** The next request starts a new chain with `conversation` resent. */
  startOver(conversation: ConversationInput[]): void {
    this.restart = conversation;
    this.lastResponseId = null;
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
