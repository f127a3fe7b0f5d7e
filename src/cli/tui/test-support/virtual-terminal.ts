import { Writable } from "node:stream";

/**
 * Just enough of a VT100 to replay what Ink writes in interactive mode (cursor moves, line and
 * screen erases, carriage returns, auto-wrap, a screen of `rows` over a scrollback), so a test can
 * read the terminal as a person would: what scrolled away and what is on the screen now. Colours and
 * mode switches are ignored; every character is one cell wide.
 */
export class VirtualTerminal extends Writable {
  readonly isTTY = true;
  /** Scrollback and screen: the screen is the last `rows` lines. */
  private lines: string[] = [""];
  private row = 0;
  private col = 0;
  /** Set by a write, for tests that wait for output. */
  writesSeen = 0;

  constructor(
    readonly columns = 100,
    readonly rows = 30,
  ) {
    super({ decodeStrings: false });
  }

  override _write(
    chunk: Buffer | string,
    _encoding: BufferEncoding,
    callback: (error?: Error | null) => void,
  ): void {
    this.feed(String(chunk));
    this.writesSeen++;
    this.emit("frame");
    callback();
  }

  /** Everything: scrollback then screen, right-trimmed, without trailing blank lines. */
  text(): string {
    const lines = this.lines.map((line) => line.trimEnd());
    while (lines.length > 0 && lines.at(-1) === "") lines.pop();
    return lines.join("\n");
  }

  private get top(): number {
    return Math.max(0, this.lines.length - this.rows);
  }

  private feed(data: string): void {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: parsing terminal output is the point
    const tokens = data.match(/\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b.|[\s\S]/g) ?? [];
    for (const token of tokens) {
      if (token === "\n") this.lineFeed();
      else if (token === "\r") this.col = 0;
      else if (token.startsWith("\x1b[")) this.csi(token);
      else if (token.startsWith("\x1b")) continue;
      else if (token >= " ") this.put(token);
    }
  }

  private put(char: string): void {
    if (this.col >= this.columns) this.lineFeed();
    const line = (this.lines[this.row] ?? "").padEnd(this.col, " ");
    this.lines[this.row] = line.slice(0, this.col) + char + line.slice(this.col + 1);
    this.col++;
  }

  private lineFeed(): void {
    this.row++;
    if (this.row >= this.lines.length) this.lines.push("");
    this.col = 0;
  }

  private csi(token: string): void {
    const final = token.at(-1)!;
    if (token.includes("?")) return;
    const params = token
      .slice(2, -1)
      .split(";")
      .map((p) => (p === "" ? undefined : Number(p)));
    const n = params[0] ?? 1;
    switch (final) {
      case "A":
        this.row = Math.max(this.top, this.row - n);
        break;
      case "B":
        this.row = Math.min(this.lines.length - 1, this.row + n);
        break;
      case "C":
        this.col = Math.min(this.columns - 1, this.col + n);
        break;
      case "D":
        this.col = Math.max(0, this.col - n);
        break;
      case "E":
        this.row = Math.min(this.lines.length - 1, this.row + n);
        this.col = 0;
        break;
      case "G":
        this.col = n - 1;
        break;
      case "H":
        this.row = this.top + (params[0] ?? 1) - 1;
        this.col = (params[1] ?? 1) - 1;
        while (this.row >= this.lines.length) this.lines.push("");
        break;
      case "K": {
        const line = this.lines[this.row] ?? "";
        const mode = params[0] ?? 0;
        this.lines[this.row] =
          mode === 2
            ? ""
            : mode === 1
              ? " ".repeat(this.col) + line.slice(this.col)
              : line.slice(0, this.col);
        break;
      }
      case "J": {
        const mode = params[0] ?? 0;
        if (mode === 0) {
          this.lines[this.row] = (this.lines[this.row] ?? "").slice(0, this.col);
          this.lines.length = this.row + 1;
        } else if (mode === 2) {
          for (let i = this.top; i < this.lines.length; i++) this.lines[i] = "";
        } else if (mode === 3) {
          const top = this.top;
          this.lines.splice(0, top);
          this.row -= top;
        }
        break;
      }
      default:
        break;
    }
  }
}
