import type { LlamaContextSequence, Token } from "node-llama-cpp";
import { SparkError } from "../../../protocol/errors.js";

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

/**
 * The context's sequences, one per conversation in flight. A request gets its own conversation's
 * sequence when idle, else the idle sequence that shares the longest prefix with its prompt (like
 * llama-server's slot similarity), else the least recently used; when all are busy it waits.
 */
export class SequencePool {
  private readonly slots: Slot[];
  private readonly waiters: (() => void)[] = [];
  private clock = 0;

  constructor(sequences: LlamaContextSequence[]) {
    this.slots = sequences.map((sequence) => ({
      sequence,
      conversation: undefined,
      busy: false,
      lastUsed: 0,
      spans: [],
    }));
  }

  async acquire(
    tokens: readonly Token[],
    conversation: string | undefined,
    signal?: AbortSignal,
  ): Promise<Slot> {
    for (;;) {
      const slot = this.tryAcquire(tokens, conversation);
      if (slot) return slot;
      await this.waitForRelease(signal);
    }
  }

  /** A sequence as {@link acquire} picks it, or undefined at once when every sequence is busy. */
  tryAcquire(tokens: readonly Token[], conversation: string | undefined): Slot | undefined {
    const slot = this.pick(tokens, conversation);
    if (!slot) return undefined;
    slot.busy = true;
    slot.lastUsed = ++this.clock;
    if (slot.conversation !== conversation) slot.spans = [];
    slot.conversation = conversation;
    return slot;
  }

  release(slot: Slot): void {
    slot.busy = false;
    this.waiters.shift()?.();
  }

  private pick(tokens: readonly Token[], conversation: string | undefined): Slot | undefined {
    const idle = this.slots.filter((slot) => !slot.busy);
    if (idle.length === 0) return undefined;
    const own =
      conversation === undefined ? undefined : idle.find((slot) => slot.conversation === conversation);
    if (own) return own;
    let best: Slot | undefined;
    let bestShared = -1;
    for (const slot of idle) {
      const shared = slot.sequence.compareContextTokens(tokens as Token[]).firstDifferentIndex;
      if (shared > bestShared || (shared === bestShared && best && slot.lastUsed < best.lastUsed)) {
        best = slot;
        bestShared = shared;
      }
    }
    return best;
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
