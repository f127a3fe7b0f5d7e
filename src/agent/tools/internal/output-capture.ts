/**
 * Collects a process's output within a byte budget, keeping its first and last halves: the start
 * says what ran, the end says how it finished. Memory stays bounded however much is written.
 */
export class OutputCapture {
  private readonly half: number;
  private readonly head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private dropped = 0;

  constructor(maxBytes: number) {
    this.half = Math.floor(maxBytes / 2);
  }

  add(chunk: Buffer): void {
    if (this.headBytes < this.half) {
      const take = Math.min(this.half - this.headBytes, chunk.length);
      this.head.push(chunk.subarray(0, take));
      this.headBytes += take;
      chunk = chunk.subarray(take);
      if (chunk.length === 0) return;
    }
    this.tail.push(chunk);
    this.tailBytes += chunk.length;
    if (this.tailBytes > this.half * 2) this.trimTail();
  }

  text(): string {
    this.trimTail();
    if (this.dropped === 0) return Buffer.concat([...this.head, ...this.tail]).toString("utf8");
    const head = Buffer.concat(this.head).toString("utf8");
    const tail = Buffer.concat(this.tail).toString("utf8");
    return `${head}\n[… ${this.dropped} bytes of output omitted …]\n${tail}`;
  }

  private trimTail(): void {
    if (this.tailBytes <= this.half) return;
    const joined = Buffer.concat(this.tail);
    const excess = joined.length - this.half;
    this.dropped += excess;
    this.tail = [joined.subarray(excess)];
    this.tailBytes = this.half;
  }
}
