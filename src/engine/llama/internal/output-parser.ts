/**
 * How a chat template writes a function call as text:
 * `prefix + name + paramsPrefix + <JSON arguments> + suffix` (e.g. Qwen's
 * `<tool_call>\n{"name": "` ... `", "arguments": ` ... `}\n</tool_call>`).
 */
export interface CallSyntax {
  prefix: string;
  paramsPrefix: string;
  suffix: string;
}

export type ParsedOutput =
  | { type: "text"; text: string }
  | { type: "call"; name: string; arguments: string }
  | { type: "stop" };

/**
 * Splits streamed model text into plain text, native-format function calls and the end of the
 * turn. Text that might be the start of a stop trigger or of a call is held back until it is
 * known not to be, so nothing of the template ever reaches the client.
 */
export class OutputParser {
  private buffer = "";
  private mode: "text" | "call" | "stopped" = "text";
  private readonly callPrefix: string | null;
  private readonly callSuffix: string;
  private readonly markers: string[];

  constructor(
    stopTriggers: readonly string[],
    private readonly call: CallSyntax | null,
  ) {
    // Templates may put white space before the prefix; match the call on its first visible text.
    this.callPrefix = call ? call.prefix.trimStart() : null;
    this.callSuffix = call ? call.suffix.trim() : "";
    this.markers = [
      ...stopTriggers.filter((t) => t.length > 0),
      ...(this.callPrefix ? [this.callPrefix] : []),
    ];
  }

  get stopped(): boolean {
    return this.mode === "stopped";
  }

  /** Feeds the next piece of decoded text; returns what is now certain. */
  push(text: string): ParsedOutput[] {
    if (this.mode === "stopped") return [];
    this.buffer += text;
    const out: ParsedOutput[] = [];
    for (;;) {
      if (this.mode === "text") {
        if (!this.scanText(out)) break;
      } else if (this.mode === "call") {
        if (!this.scanCall(out)) break;
      } else break;
    }
    return out;
  }

  /** The model stopped (EOS or length): whatever is held back is plain text after all. */
  finish(): ParsedOutput[] {
    if (this.mode === "stopped") return [];
    // An unfinished call is text after all, written as the model wrote it.
    const rest = this.mode === "call" ? this.callPrefix + this.buffer : this.buffer;
    this.buffer = "";
    this.mode = "stopped";
    return rest ? [{ type: "text", text: rest }] : [];
  }

  /** Returns true when it changed mode and scanning should go on. */
  private scanText(out: ParsedOutput[]): boolean {
    let first = -1;
    let marker = "";
    for (const candidate of this.markers) {
      const at = this.buffer.indexOf(candidate);
      if (at !== -1 && (first === -1 || at < first)) {
        first = at;
        marker = candidate;
      }
    }
    if (first !== -1) {
      const before = this.buffer.slice(0, first);
      const isCall = marker === this.callPrefix;
      // White space right before a call belongs to the call's template, not to the text.
      const visible = isCall ? before.trimEnd() : before;
      if (visible) out.push({ type: "text", text: visible });
      this.buffer = this.buffer.slice(first + marker.length);
      if (isCall) {
        this.mode = "call";
        return true;
      }
      this.mode = "stopped";
      this.buffer = "";
      out.push({ type: "stop" });
      return false;
    }
    const hold = this.partialMarkerLength();
    const ready = this.buffer.slice(0, this.buffer.length - hold);
    if (ready) out.push({ type: "text", text: ready });
    this.buffer = this.buffer.slice(this.buffer.length - hold);
    return false;
  }

  /** Longest buffer suffix that is a proper prefix of a marker. */
  private partialMarkerLength(): number {
    let longest = 0;
    for (const marker of this.markers) {
      const max = Math.min(marker.length - 1, this.buffer.length);
      for (let n = max; n > longest; n--) {
        if (this.buffer.endsWith(marker.slice(0, n))) {
          longest = n;
          break;
        }
      }
    }
    // White space before a (possible) call prefix belongs to the call's template: hold it too.
    if (this.callPrefix) {
      let start = this.buffer.length - longest;
      while (start > 0 && /\s/.test(this.buffer[start - 1]!)) start--;
      longest = this.buffer.length - start;
    }
    return longest;
  }

  private scanCall(out: ParsedOutput[]): boolean {
    const call = this.call!;
    const nameEnd = this.buffer.indexOf(call.paramsPrefix);
    if (nameEnd === -1) return false;
    const argsStart = nameEnd + call.paramsPrefix.length;
    const argsEnd = endOfJsonValue(this.buffer, argsStart);
    if (argsEnd === -1) return false;
    const rest = this.buffer.slice(argsEnd).trimStart();
    if (rest.length < this.callSuffix.length) return false;
    if (!rest.startsWith(this.callSuffix)) {
      // Not a well-formed call after all: hand the text over as it was written.
      out.push({ type: "text", text: this.callPrefix + this.buffer });
      this.buffer = "";
      this.mode = "text";
      return false;
    }
    out.push({
      type: "call",
      name: this.buffer.slice(0, nameEnd).trim(),
      arguments: this.buffer.slice(argsStart, argsEnd).trim(),
    });
    this.buffer = rest.slice(this.callSuffix.length);
    this.mode = "text";
    return true;
  }
}

/**
 * Index just past the JSON value starting at `start` (after white space), or -1 while it is
 * incomplete. Tracks strings and escapes; does not validate.
 */
export function endOfJsonValue(text: string, start: number): number {
  let i = start;
  while (i < text.length && /\s/.test(text[i]!)) i++;
  if (i >= text.length) return -1;
  const open = text[i];
  if (open !== "{" && open !== "[") {
    // A scalar: up to the next delimiter.
    const match = /^("(?:[^"\\]|\\.)*"|[^\s,}\]]+)/.exec(text.slice(i));
    if (!match) return -1;
    const end = i + match[0].length;
    return end < text.length ? end : -1;
  }
  let depth = 0;
  let inString = false;
  for (; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === "\\") i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === "{" || ch === "[") depth++;
    else if (ch === "}" || ch === "]") {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}
