import type { ContextUsage } from "../protocol/agent.js";
import { type ConversationInput, compactHistory, historyFromItems } from "./conversation-history.js";
import type { HookTurn, ThreadHooks } from "./hooks/thread-hooks.js";
import { type ItemLog, newItemId } from "./item-log.js";
import type { requestSettings } from "./request-settings.js";
import type { ResponseChain } from "./response-chain.js";

/** The share of the context window past which older turns are compacted, by default. */
export const DEFAULT_COMPACT_AT = 0.8;
/** The shares `compact_at` may be: below, every turn would compact; above, no room is left to answer. */
export const COMPACT_AT_RANGE = { min: 0.1, max: 0.95 } as const;

export interface ContextCompactionOptions {
  chain: ResponseChain;
  log: ItemLog;
  /** The settings every request repeats: the instructions and tools count toward the context. */
  settings: () => ReturnType<typeof requestSettings>;
  /** The model's context window. Default: 128K. */
  contextBudget?: number | undefined;
  /** The share of {@link contextBudget} past which older turns are compacted. Default: 0.8. */
  compactAt?: number | undefined;
  hooks?: ThreadHooks | undefined;
}

/** What one compaction did; null from `compact` when nothing was old enough to compact. */
export interface Compacted {
  beforeTokens: number;
  afterTokens: number;
}

/**
 * How full the thread's context is, and its compaction: the conversation's size is the last model
 * response's input and output (the chain's `lastTokens`); past the threshold the chain starts over
 * with older turns digested (see compactHistory), and every face hears of it.
 */
export class ContextCompaction {
  constructor(private readonly options: ContextCompactionOptions) {
    const share = options.compactAt;
    if (share !== undefined && !(share >= COMPACT_AT_RANGE.min && share <= COMPACT_AT_RANGE.max))
      throw new RangeError(
        `compact_at must be from ${COMPACT_AT_RANGE.min} to ${COMPACT_AT_RANGE.max} (a share of the context window); got ${share}.`,
      );
  }

  get window(): number {
    return this.options.contextBudget ?? 128_000;
  }

  /**
   * Tokens of conversation past which old turns are compacted: `compactAt` of the window, or less
   * when the output cap needs more room (a server such as vLLM refuses a request whose input and
   * cap together pass the context), but never below half of it (nor above `compactAt`).
   */
  threshold(): number {
    const budget = this.window;
    const share = this.options.compactAt ?? DEFAULT_COMPACT_AT;
    const reserve = this.options.settings().max_output_tokens ?? 0;
    return Math.floor(Math.min(budget * share, Math.max(budget * 0.5, budget - reserve)));
  }

  get due(): boolean {
    return this.options.chain.lastTokens > this.threshold();
  }

  usage(): ContextUsage {
    return {
      used_tokens: this.options.chain.lastTokens,
      window_tokens: this.window,
      compact_at_tokens: this.threshold(),
    };
  }

  /** Tells every face how full the context is now (`context.updated`). */
  report(turnId: string | null): void {
    this.options.log.emit({
      type: "context.updated",
      ...(turnId ? { turn_id: turnId } : {}),
      context: this.usage(),
    });
  }

  /**
   * Starts a new chain whose input is a compacted copy of the conversation (after the PreCompact
   * hooks), and says so: a notice item and `context.updated`. `pending`: the id of a user message
   * recorded but not sent yet (it goes with the next request, after the compacted conversation).
   * Null, with nothing changed, when no turn is old enough to compact, or (automatically) when
   * compacting would not make the conversation smaller.
   */
  async compact(
    turn: HookTurn,
    how: {
      trigger: "auto" | "manual";
      focus?: string;
      pending?: string;
      /** Asked after the hooks ran (they take time): false leaves everything as it was. */
      stillWanted?: () => boolean;
    },
  ): Promise<Compacted | "cancelled" | null> {
    const { chain, log } = this.options;
    const items = log.items.filter((item) => item.id !== how.pending);
    const focus = how.focus ? { focus: how.focus } : {};
    const fullSize = this.size(historyFromItems(items));
    // The last two turns stay whole, or the last one when that is what frees room; by hand the
    // person asks for room now: the last one. Automatically, only a compaction that makes the
    // conversation smaller (else every request would compact again); by hand, as asked.
    let compacted: ConversationInput[] | null = null;
    for (const keepTurns of how.trigger === "auto" ? [2, 1] : [1]) {
      const candidate = compactHistory(items, { ...focus, keepTurns });
      if (candidate && (how.trigger === "manual" || this.size(candidate) < fullSize)) {
        compacted = candidate;
        break;
      }
    }
    if (!compacted) return null;
    const compactedSize = this.size(compacted);
    await this.options.hooks?.beforeCompact(turn, how.trigger, how.focus ?? "");
    if (how.stillWanted && !how.stillWanted()) return "cancelled";
    const beforeTokens = chain.lastTokens;
    // Tokens per character as the last response measured them; a rough 4 characters a token before any.
    const afterTokens =
      beforeTokens > 0 ? Math.round((beforeTokens * compactedSize) / fullSize) : Math.ceil(compactedSize / 4);
    chain.owedOutputs = [];
    chain.startOver(compacted);
    chain.lastTokens = afterTokens;
    log.complete(turn.id, {
      type: "notice",
      id: newItemId(),
      text:
        `Context compacted: ${count(beforeTokens)} -> ${count(afterTokens)} tokens` +
        (how.trigger === "auto"
          ? ` (the conversation passed ${count(this.threshold())} of the ${count(this.window)}-token window).`
          : "."),
    });
    this.report(turn.id || null);
    return { beforeTokens, afterTokens };
  }

  /** Characters of what a request with `conversation` sends: instructions, tools and the conversation. */
  private size(conversation: ConversationInput[]): number {
    const { instructions, tools } = this.options.settings();
    return instructions.length + JSON.stringify(tools).length + JSON.stringify(conversation).length;
  }
}

/** `12,300`: a token count as every face writes it. */
const count = (tokens: number) => tokens.toLocaleString("en-US");
