/**
 * A one-line progress status on stderr: redrawn in place on a terminal, otherwise printed once at
 * the start and once at the end so logs stay clean.
 */
export class StatusLine {
  private lastPercent = -1;
  private readonly tty: boolean;

  constructor(
    private readonly label: string,
    private readonly stream: NodeJS.WritableStream & { isTTY?: boolean } = process.stderr,
  ) {
    this.tty = stream.isTTY === true;
    if (!this.tty) stream.write(`${label}...\n`);
  }

  /** `fraction` from 0 to 1. */
  update(fraction: number): void {
    const percent = Math.floor(Math.min(1, Math.max(0, fraction)) * 100);
    if (!this.tty || percent === this.lastPercent) return;
    this.lastPercent = percent;
    this.stream.write(`\r${this.label}... ${percent}%\x1b[K`);
  }

  done(message: string): void {
    this.stream.write(this.tty ? `\r${message}\x1b[K\n` : `${message}\n`);
  }
}
