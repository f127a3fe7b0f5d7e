import type { LlamaContextSequence, Token } from "node-llama-cpp";
import { SparkError } from "../../../protocol/errors.js";
import { copySequencePrefix } from "./sequence-copy.js";

/**
 * Tokens the model generated, and the (possibly different) tokens the same text renders to. When a
 * later prompt contains the rendered form at `start`, the generated tokens are put back, so the KV
 * state built while decoding is reused instead of recomputed.
 */
export interface GeneratedSpan {
  start: number;
  generated: Token[];
  rendered: Token[];
}

export interface Slot {
  readonly sequence: LlamaContextSequence;
  conversation: string | undefined;
  busy: boolean;
  lastUsed: number;
  spans: GeneratedSpan[];
}

/** The sequence a request takes, and the idle sequence whose prefix is copied into it first. */
interface Choice {
  slot: Slot;
  copy?: { from: Slot; tokens: number };
}

/**
 * The context's sequences, one per conversation in flight. A request gets its own conversation's
 * sequence when idle, else the idle sequence that shares the longest prefix with its prompt (like
 * llama-server's slot similarity), else the least recently used; when all are busy it waits.
 *
 * When that longest prefix is another conversation's (a fork, a second chat with the same system
 * prompt) and the context has another idle sequence, {@link acquire} copies the prefix's KV cells
 * into a sequence of its own (a never-used one, else the least recently used) instead of taking
 * the other conversation's sequence over: that conversation keeps its whole cache. With one
 * sequence there is nowhere to copy to, and the request takes the sequence over as before.
 *
 * Between sequences that are otherwise as good, a request takes one next to the busy ones. With a KV
 * stream per sequence, llama.cpp decodes a step's tokens in one micro-batch only while their
 * sequence ids run without a gap, so concurrent streams on sequences 2 and 4 cost two decodes a
 * step where 2 and 3 cost one. Sequences that share nearly the longest prefix count as good
 * ({@link NEARLY_AS_LONG}): new conversations with the same system prompt share it on every
 * sequence, and differ by a few tokens of their own.
 */
export class SequencePool {
  private readonly slots: Slot[];
  private readonly waiters: (() => void)[] = [];
  /** Idle sequences held busy only while a prefix is copied out of them (for a moment). */
  private readonly sources = new Set<Slot>();
  private clock = 0;

  /**
   * `sequences`: the context's, in the order it made them (their ids' order).
   * `copied`: called after a prefix was copied between two sequences (the draft model's sequences
   * follow their main sequences, and copy the same prefix where they hold it).
   */
  constructor(
    sequences: LlamaContextSequence[],
    private readonly copied: (
      target: Slot,
      source: Slot,
      prefix: readonly Token[],
    ) => Promise<void> = async () => {},
  ) {
    this.slots = sequences.map((sequence) => ({
      sequence,
      conversation: undefined,
      busy: false,
      lastUsed: 0,
      spans: [],
    }));
  }

  /**
   * The sequence for a request's `tokens`, once one is free; `taking` is called when one is, before
   * anything touches the context.
   */
  async acquire(
    tokens: readonly Token[],
    conversation: string | undefined,
    signal?: AbortSignal,
    taking?: () => void,
  ): Promise<Slot> {
    for (;;) {
      const choice = this.pick(tokens, conversation, true);
      if (choice) {
        taking?.();
        const slot = this.take(choice.slot, conversation);
        if (choice.copy) await this.copyPrefix(slot, choice.copy.from, tokens.slice(0, choice.copy.tokens));
        return slot;
      }
      await this.waitForRelease(signal);
    }
  }

  /**
   * A sequence as {@link acquire} picks it but without copying (a type-ahead draft takes the
   * sequence that shares the most), or undefined at once when every sequence is busy.
   */
  tryAcquire(tokens: readonly Token[], conversation: string | undefined): Slot | undefined {
    const choice = this.pick(tokens, conversation, false);
    return choice && this.take(choice.slot, conversation);
  }

  /** Whether no sequence is in use. */
  get idle(): boolean {
    return this.slots.every((slot) => !slot.busy);
  }

  release(slot: Slot): void {
    slot.busy = false;
    this.waiters.shift()?.();
  }

  private take(slot: Slot, conversation: string | undefined): Slot {
    slot.busy = true;
    slot.lastUsed = ++this.clock;
    if (slot.conversation !== conversation) slot.spans = [];
    slot.conversation = conversation;
    return slot;
  }

  /** The source stays busy while its cells are copied, so its owner cannot change them meanwhile. */
  private async copyPrefix(target: Slot, source: Slot, prefix: readonly Token[]): Promise<void> {
    source.busy = true;
    this.sources.add(source);
    try {
      const held = await copySequencePrefix(target.sequence, source.sequence, prefix.length);
      await this.copied(target, source, prefix.slice(0, held));
    } finally {
      this.sources.delete(source);
      this.release(source);
    }
  }

  private pick(
    tokens: readonly Token[],
    conversation: string | undefined,
    copying: boolean,
  ): Choice | undefined {
    const idle = this.slots.filter((slot) => !slot.busy);
    if (idle.length === 0) return undefined;
    const own =
      conversation === undefined ? undefined : idle.find((slot) => slot.conversation === conversation);
    if (own) return { slot: own };
    const { runsWith, better } = this.placement();
    const shares = idle.map((slot) => ({ slot, shared: sharedPrefix(slot, tokens) }));
    const longest = shares.reduce((a, b) =>
      b.shared > a.shared || (b.shared === a.shared && better(b.slot, a.slot)) ? b : a,
    );
    // Sharing a few tokens less than the longest is as good: they are evaluated again.
    const near = shares.filter(({ shared }) => shared >= longest.shared - NEARLY_AS_LONG);
    // A request without a conversation may be the same client's (chat completions resend their
    // history): it takes the best placed of them over, as does anything when nothing is shared.
    if (
      !copying ||
      conversation === undefined ||
      longest.slot.conversation === undefined ||
      longest.shared <= 0
    ) {
      const placed = near.reduce((a, b) => {
        const runs = runsWith(b.slot) - runsWith(a.slot);
        return runs < 0 || (runs === 0 && b.shared > a.shared) ? b : a;
      }, longest);
      return { slot: placed.slot };
    }
    // Else the prefix is copied into the best placed sequence that leaves one of them to copy from.
    const target = idle
      .filter((slot) => near.some((source) => source.slot !== slot))
      .reduce<Slot | undefined>(
        (chosen, slot) => (!chosen || better(slot, chosen) ? slot : chosen),
        undefined,
      );
    if (!target) return { slot: longest.slot };
    // The worst placed of them, so that the places next to the busy ones stay free meanwhile.
    const source = near
      .filter(({ slot }) => slot !== target)
      .reduce((a, b) => {
        const runs = runsWith(target, b.slot) - runsWith(target, a.slot);
        return runs > 0 || (runs === 0 && b.shared > a.shared) ? b : a;
      });
    if (sharedPrefix(target, tokens) >= source.shared) return { slot: target };
    return { slot: target, copy: { from: source.slot, tokens: source.shared } };
  }

  /**
   * How many runs of consecutive ids the busy sequences make with idle `slots` taken too, and
   * whether idle slot `a` is a better place than `b` for a new conversation's cells: one that leaves
   * fewer runs, then a never-used one, then the least recently used.
   */
  private placement(): {
    runsWith: (...slots: Slot[]) => number;
    better: (a: Slot, b: Slot) => boolean;
  } {
    // A copy's source is free again in a moment: a place next to it would soon be apart.
    const busy = this.slots.map((slot) => slot.busy && !this.sources.has(slot));
    const runsWith = (...slots: Slot[]) => {
      const taken = busy.map((isBusy, i) => isBusy || slots.includes(this.slots[i]!));
      return taken.filter((isTaken, i) => isTaken && !taken[i - 1]).length;
    };
    const unused = (slot: Slot) => slot.conversation === undefined && slot.sequence.nextTokenIndex === 0;
    const better = (a: Slot, b: Slot) => {
      const runs = runsWith(a) - runsWith(b);
      if (runs !== 0) return runs < 0;
      if (unused(a) !== unused(b)) return unused(a);
      return a.lastUsed < b.lastUsed;
    };
    return { runsWith, better };
  }

  private waitForRelease(signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(new SparkError("cancelled", "The request was cancelled while waiting for the model."));
        return;
      }
      const onAbort = () => {
        const index = this.waiters.indexOf(wake);
        if (index !== -1) this.waiters.splice(index, 1);
        reject(new SparkError("cancelled", "The request was cancelled while waiting for the model."));
      };
      const wake = () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiters.push(wake);
    });
  }
}

/**
 * Prompt tokens a sequence may share less than the one sharing the most and still be taken for its
 * place: evaluating them again (a prompt batch) costs less than a second micro-batch in each step
 * of a reply (on the 1.5B shape, 2 cores: about 0.4 s against 60-70 ms a step).
 */
const NEARLY_AS_LONG = 32;

function sharedPrefix(slot: Slot, tokens: readonly Token[]): number {
  return slot.sequence.compareContextTokens(tokens as Token[]).firstDifferentIndex;
}

/**
 * Puts generated tokens back where the prompt holds their re-rendered form. Returns the prompt and
 * the spans that applied; the others no longer describe this conversation.
 */
export function restoreGeneratedTokens(
  tokens: Token[],
  spans: readonly GeneratedSpan[],
): { tokens: Token[]; applied: GeneratedSpan[] } {
  let out = tokens;
  const applied: GeneratedSpan[] = [];
  for (const span of spans) {
    const { start, rendered, generated } = span;
    if (start + rendered.length > out.length) continue;
    let same = true;
    for (let i = 0; i < rendered.length && same; i++) same = out[start + i] === rendered[i];
    if (!same) continue;
    out = [...out.slice(0, start), ...generated, ...out.slice(start + rendered.length)];
    applied.push(span);
  }
  return { tokens: out, applied };
}
