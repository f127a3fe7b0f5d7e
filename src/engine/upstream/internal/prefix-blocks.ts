import { createHash } from "node:crypto";

/** Characters of serialized prompt per block. */
export const DEFAULT_BLOCK_CHARS = 256;

/**
 * A request's prompt as a chain of block hashes, as Dynamo and llm-d key KV blocks: the prompt
 * (its tools, then each message, serialized as JSON in the order the upstream renders them) is cut
 * into fixed-size blocks, and block i's hash covers block i and every block before it. Two prompts
 * share their first k hashes exactly when they share their first k blocks, so the number of a
 * replica's known hashes at the front of a request is how much of its prefix that replica has
 * likely cached. A trailing partial block is left out (no upstream caches it as a block either).
 */
export function prefixBlocks(
  parts: { tools?: unknown; messages: readonly unknown[] },
  blockChars = DEFAULT_BLOCK_CHARS,
): string[] {
  let text = JSON.stringify(parts.tools ?? []);
  for (const message of parts.messages) text += JSON.stringify(message);
  const hashes: string[] = [];
  let previous = "";
  for (let start = 0; start + blockChars <= text.length; start += blockChars) {
    previous = createHash("sha256")
      .update(previous)
      .update(text.slice(start, start + blockChars))
      .digest("base64url")
      .slice(0, 16);
    hashes.push(previous);
  }
  return hashes;
}

/**
 * The block hashes one replica was sent, least recently used forgotten past `capacity`: an
 * estimate of its prefix cache learned from Spark's own traffic (the replica evicts on its own
 * terms; a wrong guess costs a recomputed prefix, never a wrong answer).
 */
export class PrefixMemory {
  private readonly blocks = new Set<string>();

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.blocks.size;
  }

  /** Records `hashes` as held, most recent last. */
  remember(hashes: readonly string[]): void {
    for (const hash of hashes) {
      this.blocks.delete(hash);
      this.blocks.add(hash);
    }
    for (const oldest of this.blocks) {
      if (this.blocks.size <= this.capacity) break;
      this.blocks.delete(oldest);
    }
  }

  /** How many of `hashes`, from the front, this replica likely holds. */
  matched(hashes: readonly string[]): number {
    let n = 0;
    while (n < hashes.length && this.blocks.has(hashes[n]!)) n++;
    return n;
  }

  clear(): void {
    this.blocks.clear();
  }
}
