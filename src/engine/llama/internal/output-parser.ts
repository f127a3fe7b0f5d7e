import type { ToolDefinition } from "../../../protocol/chat.js";
import { partialSuffix, type ScanWork, searched } from "./arguments-decoder.js";
import { CallsParser } from "./calls-parser.js";
import type { ParsedOutput } from "./parsed-output.js";
import type { CallSyntax } from "./tool-call-syntax.js";

export type { ParsedOutput } from "./parsed-output.js";

type Mode = "text" | "reasoning" | "calls" | "stopped";

export interface OutputParserOptions {
  /** Calls are parsed (the request has tools); else only reasoning and message framing are. Default true. */
  calls?: boolean;
  /** The request's tools: their schemas type the arguments of formats that do not write JSON. */
  tools?: readonly ToolDefinition[];
  /** Counts the characters the parser examines, for tests of its linearity. Default: a counter of its own. */
  work?: ScanWork;
}

/**
 * Splits streamed model text into answer text, reasoning, function calls in the model's own
 * syntax (arguments streamed as they are written) and the end of the turn. Text that might be the
 * start of a marker is held back until it is known not to be, so nothing of the template reaches
 * the client. Offsets count UTF-16 units of the whole output.
 *
 * Each piece of text is scanned once (plus a bounded look back at what may start a marker), and
 * a call is parsed by a {@link CallsParser} that keeps its state: the work of a reply grows with
 * its length, however finely it streams.
 */
export class OutputParser {
  private buffer = "";
  /** Output offset of `buffer[0]`. */
  private offset = 0;
  private mode: Mode = "text";
  private readonly markers: string[];
  private paused = false;
  /**
   * What is skipped before the answer's first visible character: blank lines at the start of the
   * reply (and after template framing a model echoed there), any white space after reasoning; null
   * once the answer started.
   */
  private answerStart: "blank-lines" | "space" | null = "blank-lines";
  private calls: CallsParser | undefined;
  /** In text: how much of the buffer's start is known to hold no marker (scanned before, held back). */
  private clean = 0;
  /** In text: how much of the buffer's start is known to be white space (held back before a call). */
  private space = 0;
  private readonly work: ScanWork;

  constructor(
    stopTriggers: readonly string[],
    private readonly syntax: CallSyntax | null,
    options: OutputParserOptions = {},
  ) {
    const calls = syntax !== null && (options.calls ?? true) ? syntax : undefined;
    const messages = syntax?.messages;
    this.stops = [...stopTriggers, ...(calls?.stops ?? [])].filter((t) => t.length > 0);
    this.trigger = calls?.trigger;
    this.markers = [
      ...this.stops,
      ...(calls ? [calls.trigger] : []),
      ...(syntax?.reasoning ? [syntax.reasoning.open] : []),
      ...(messages ? [messages.start, messages.header, messages.end] : []),
      ...(syntax?.framing ?? []),
    ];
    this.tools = new Map((options.tools ?? []).map((tool) => [tool.name, tool.parameters]));
    this.work = options.work ?? { chars: 0 };
    // A bare JSON opening (Llama 3's `{"name": "`) starts a call only as the whole output: later
    // in an answer it is a JSON document being shown.
    this.triggerAnywhere = !syntax?.trigger.startsWith("{");
  }

  private readonly stops: string[];
  /** The call trigger scanned for (none without tools). */
  private readonly trigger: string | undefined;
  private readonly tools: Map<string, unknown>;

  private readonly triggerAnywhere: boolean;
  /** Visible answer text has been emitted. */
  private answered = false;

  /** The markers scanned for now. */
  private active(): string[] {
    if (this.triggerAnywhere || !this.answered) return this.markers;
    return this.markers.filter((marker) => marker !== this.trigger);
  }

  /** Characters examined so far (see {@link OutputParserOptions.work}). */
  get examined(): number {
    return this.work.chars;
  }

  get stopped(): boolean {
    return this.mode === "stopped";
  }

  /** In a call or a section of calls. */
  get inCalls(): boolean {
    return this.mode === "calls";
  }

  /** Feeds the next piece of decoded text (may be empty, to go on after `calls_begin`). */
  push(text: string): ParsedOutput[] {
    if (this.mode === "stopped") return [];
    this.buffer += text;
    this.paused = false;
    const out: ParsedOutput[] = [];
    while (!this.paused && this.step(out));
    return out;
  }

  /**
   * Drops the text after output offset `at` (the engine is about to generate it again, under the
   * call grammar). Only valid right after `calls_begin`, for an offset at or after it.
   */
  truncate(at: number): void {
    this.buffer = this.buffer.slice(0, Math.max(0, at - this.offset));
    this.forgetScan();
  }

  /** The model stopped (EOS or length): held-back text is text; an unfinished call is dropped. */
  finish(): ParsedOutput[] {
    if (this.mode === "stopped") return [];
    const out: ParsedOutput[] = [];
    if (this.mode === "text" && this.buffer) out.push({ type: "text", text: this.buffer });
    if (this.mode === "reasoning" && this.buffer) out.push({ type: "reasoning", text: this.buffer });
    if (this.mode === "calls") out.push(...this.calls!.finish());
    this.buffer = "";
    this.mode = "stopped";
    return out;
  }

  /** One step of scanning; false when more input is needed. */
  private step(out: ParsedOutput[]): boolean {
    switch (this.mode) {
      case "text":
        return this.scanText(out);
      case "reasoning":
        return this.scanReasoning(out);
      case "calls": {
        const parsed = this.calls!.push(this.buffer);
        this.consume(this.buffer.length);
        out.push(...parsed.out);
        if (parsed.ended !== undefined) {
          this.mode = "text";
          this.buffer = parsed.ended;
          this.forgetScan();
          this.offset -= parsed.ended.length;
          return true;
        }
        return false;
      }
      default:
        return false;
    }
  }

  private scanText(out: ParsedOutput[]): boolean {
    if (this.answerStart) {
      // The answer starts after the white space that separates it from the reasoning, or after the
      // blank lines a reply opens with (a first line's indentation is kept).
      const blank = this.answerStart === "space" ? /^\s*/ : /^(?:[ \t]*\r?\n)*/;
      const skip = blank.exec(this.buffer)![0].length;
      this.work.chars += skip + 1;
      this.consume(skip);
      // Spaces alone may still end a blank line: wait for what follows them.
      if (this.buffer === "" || (this.answerStart === "blank-lines" && /^[ \t]*$/.test(this.buffer)))
        return false;
      this.answerStart = null;
    }
    const markers = this.active();
    const found = firstMarker(this.buffer, markers, this.clean, this.work);
    if (!found) {
      const { hold, space } = this.holdBack(markers);
      this.emit(out, "text", this.buffer.length - hold);
      this.clean = this.buffer.length;
      this.space = space;
      return false;
    }
    const { at, marker } = found;
    const syntax = this.syntax;
    const messages = syntax?.messages;
    if (syntax && marker === this.trigger && !this.triggerAnywhere && this.buffer.slice(0, at).trim()) {
      // An answer came first (however the text was split): the JSON opening is shown as it is.
      this.emit(out, "text", at);
      return true;
    }
    if (syntax && marker === this.trigger) {
      // White space right before a call belongs to the call's template, not to the text.
      const visible = this.buffer.slice(0, at).trimEnd();
      if (visible) out.push({ type: "text", text: visible });
      this.consume(at + marker.length);
      this.mode = "calls";
      this.forgetScan();
      this.calls = new CallsParser(syntax, this.tools, this.work);
      out.push({ type: "calls_begin", at: this.offset });
      this.paused = true;
      return false;
    }
    if (syntax?.reasoning && marker === syntax.reasoning.open) {
      this.emit(out, "text", at);
      this.consume(marker.length);
      this.mode = "reasoning";
      this.forgetScan();
      return true;
    }
    if (syntax?.framing?.includes(marker)) {
      // Template framing a model echoes (SmolLM2's `</tool_response>` after a tool's result): never text.
      this.emit(out, "text", at);
      this.consume(marker.length);
      if (!this.answered) this.answerStart = "blank-lines";
      return true;
    }
    if (messages && (marker === messages.start || marker === messages.end)) {
      // Between messages: framing, never shown.
      this.emit(out, "text", at);
      this.consume(marker.length);
      return true;
    }
    if (messages && marker === messages.header) {
      this.emit(out, "text", at);
      return this.header(out);
    }
    this.emit(out, "text", at);
    this.mode = "stopped";
    this.buffer = "";
    out.push({ type: "stop" });
    return false;
  }

  /**
   * A message header at the buffer's start (Harmony's `<|channel|>NAME[ to=...]<|message|>`): a
   * call when it names a function, reasoning for a reasoning channel, else the answer. Never shown.
   */
  private header(out: ParsedOutput[]): boolean {
    const messages = this.syntax!.messages!;
    // A header ends within 256 characters: decided on that much, however the text was split.
    const header = this.buffer.slice(0, 257);
    const end = header.indexOf(messages.headerEnd);
    const call = this.trigger === undefined ? -1 : header.indexOf(this.trigger);
    this.work.chars += 2 * header.length;
    if (call !== -1 && (end === -1 || call < end)) {
      // `<|channel|>commentary to=functions.NAME...`: the call starts at its trigger.
      this.consume(call);
      return true;
    }
    if (end === -1) {
      if (this.buffer.length <= 256) return false;
      // Not a header after all: shown as it is.
      this.emit(out, "text", messages.header.length);
      return true;
    }
    const channel = this.buffer.slice(messages.header.length, end).trim().split(/\s/)[0] ?? "";
    this.consume(end + messages.headerEnd.length);
    if (messages.reasoning.includes(channel)) this.mode = "reasoning";
    this.forgetScan();
    return true;
  }

  private scanReasoning(out: ParsedOutput[]): boolean {
    const close = this.syntax!.reasoning!.close;
    const at = this.buffer.indexOf(close);
    this.work.chars += searched(this.buffer, close, 0, at);
    if (at === -1) {
      this.emit(out, "reasoning", this.buffer.length - partialSuffix(this.buffer, close, this.work));
      return false;
    }
    this.emit(out, "reasoning", at);
    this.consume(close.length);
    this.mode = "text";
    this.forgetScan();
    this.answerStart = "space";
    return true;
  }

  /** Emits the first `length` characters of the buffer as `type` (when non-empty). */
  private emit(out: ParsedOutput[], type: "text" | "reasoning", length: number): void {
    if (length <= 0) return;
    const text = this.buffer.slice(0, length);
    if (type === "text" && text.trim()) this.answered = true;
    out.push({ type, text });
    this.consume(length);
  }

  private consume(length: number): void {
    this.buffer = this.buffer.slice(length);
    this.offset += length;
    this.clean = Math.max(0, this.clean - length);
    this.space = Math.max(0, this.space - length);
  }

  /** The buffer is read anew (another mode, or other text): nothing of it is known yet. */
  private forgetScan(): void {
    this.clean = 0;
    this.space = 0;
  }

  /**
   * Length of the buffer's end that may be the start of a marker (`hold`), with the white space
   * before a call (`space`: how much of `hold` that is).
   */
  private holdBack(markers: readonly string[]): { hold: number; space: number } {
    let longest = 0;
    for (const marker of markers) longest = Math.max(longest, partialSuffix(this.buffer, marker, this.work));
    if (this.trigger !== undefined) {
      const partial = longest;
      let start = this.buffer.length - longest;
      while (start > 0 && /\s/.test(this.buffer[start - 1]!)) {
        // White space held back before is not looked at again.
        if (start <= this.space) {
          start = 0;
          break;
        }
        start--;
        this.work.chars++;
      }
      return { hold: this.buffer.length - start, space: this.buffer.length - start - partial };
    }
    return { hold: longest, space: 0 };
  }
}

/**
 * The first marker in `text` (the longest of those that start there), where the first `clean`
 * characters were scanned before and held none: one could only end after them.
 */
function firstMarker(
  text: string,
  markers: readonly string[],
  clean: number,
  work: ScanWork,
): { at: number; marker: string } | undefined {
  let best: { at: number; marker: string } | undefined;
  for (const marker of markers) {
    const from = Math.max(0, clean - marker.length + 1);
    const at = text.indexOf(marker, from);
    work.chars += searched(text, marker, from, at);
    if (at !== -1 && (!best || at < best.at || (at === best.at && marker.length > best.marker.length))) {
      best = { at, marker };
    }
  }
  return best;
}
