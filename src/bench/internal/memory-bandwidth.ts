/**
 * Memory bandwidth in bytes/s, from the best of `repeats` copies of a `bytes`-long buffer (bytes
 * read plus bytes written over the time). One thread's memcpy: a rough ceiling for decoding, which
 * reads every weight once per token.
 */
export function memoryBandwidth(bytes: number, repeats = 5): number {
  const source = Buffer.alloc(bytes, 0x5a);
  const target = Buffer.alloc(bytes);
  source.copy(target); // touch every page first
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < repeats; i++) {
    const started = performance.now();
    source.copy(target);
    best = Math.min(best, performance.now() - started);
  }
  return (2 * bytes * 1000) / best;
}
