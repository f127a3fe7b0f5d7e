/**
 * The newest stamped event lines of one thread, bounded in UTF-8 bytes. Lines are numbered from
 * 0 in the order pushed; the oldest are dropped first (a line larger than the budget is not kept).
 */
export class ReplayBuffer {
  private lines: string[] = [];
  /** Index in `lines` of the oldest kept line (lines before it are dropped, compacted lazily). */
  private head = 0;
  private bytes = 0;
  /** Sequence number of `lines[head]`. */
  private firstSeq = 0;

  constructor(
    /** Bytes of lines kept. */
    private readonly maxBytes: number,
  ) {}

  /** Sequence number of the oldest kept line (the next one's when none is kept). */
  get first(): number {
    return this.firstSeq;
  }

  /** Appends the line of the next sequence number, dropping the oldest past the budget. */
  push(line: string): void {
    this.lines.push(line);
    this.bytes += Buffer.byteLength(line);
    while (this.bytes > this.maxBytes && this.head < this.lines.length) {
      this.bytes -= Buffer.byteLength(this.lines[this.head]!);
      this.head++;
      this.firstSeq++;
    }
    // Compact once the dropped prefix is as long as what is kept: amortised O(1) per line.
    if (this.head > 1024 && this.head * 2 > this.lines.length) {
      this.lines = this.lines.slice(this.head);
      this.head = 0;
    }
  }

  /** The kept lines from sequence number `seq` on, or null when some of them are no longer kept. */
  since(seq: number): string[] | null {
    if (seq < this.firstSeq) return null;
    return this.lines.slice(this.head + (seq - this.firstSeq));
  }
}
