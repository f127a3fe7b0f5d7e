import { type ArgumentsDecoder, type ScanWork, searched } from "./arguments-decoder.js";
import { GemmaArgumentsDecoder } from "./gemma-arguments.js";
import type { ParsedOutput } from "./parsed-output.js";
import type { CallSyntax } from "./tool-call-syntax.js";
import { XmlArgumentsDecoder } from "./xml-arguments.js";

type Step =
  | "sectionOpen"
  | "callOpen"
  | "name"
  | "jsonHead"
  | "whole"
  | "args"
  | "jsonTail"
  | "callClose"
  | "afterCall";

/** A JSON string's inside: any character but a quote or backslash, or an escape. */
const CHARS = String.raw`(?:[^"\\]|\\.)*`;
/** The head of a JSON-object call: its first key, and the name and second key when the first is `name`. */
const HEAD = new RegExp(String.raw`^\{\s*"(${CHARS})"\s*:\s*("(${CHARS})"\s*,\s*"(${CHARS})"\s*:)?`);
/** What may still become the first key: `{`, `{"na`, `{"name"`. */
const FIRST_KEY_SO_FAR = new RegExp(String.raw`^(\{\s*("${CHARS}(\\|"\s*)?)?)?$`);
/** What may still become the name and the second key after `{"name":`: `"read`, `"read", "argu`. */
const NAME_SO_FAR = new RegExp(String.raw`^("${CHARS}(\\|"\s*(,\s*("${CHARS}(\\|"\s*)?)?)?)?)?$`);
/**
 * A head still incomplete past this many characters is not streamed: the call is released whole
 * once its object is complete (so a head is never scanned again and again without end).
 */
const HEAD_LIMIT = 1024;
/** A call's name (with what else its header holds) not ended within this many characters is not one. */
const NAME_LIMIT = 256;

/**
 * Parses what follows a trigger: one call, or a section of calls, in `syntax`. Tolerates other
 * white space, and for JSON-object calls other key order (then the call is released whole, once
 * complete). Anything that does not fit ends the calls: what was read is handed back as text.
 *
 * Each piece pushed is read once: a step consumes what it has decided and keeps in `window` only
 * what it is still deciding (a marker, a name, a call's head: bounded), so the work of a streamed
 * call grows with its length, however finely it is split.
 */
export class CallsParser {
  /** Text pushed and not yet consumed: steps read only this. */
  private window = "";
  /** Text pushed since the last released call (since the trigger before one), to hand back on a mismatch. */
  private raw: string[] = [];
  /** A call of this section was released: a mismatch hands back only the text after it. */
  private released = false;
  /** Some text after the trigger was consumed (the trigger's own part of a marker is behind). */
  private consumedAny = false;
  private step: Step;
  private name = "";
  /** The literal being matched by the current step. */
  private literal: LiteralMatch | undefined;
  /** The end of the JSON arguments (or the whole call object) being read. */
  private value: JsonValueEnd | undefined;
  /** The current call's argument text (or whole object text) so far. */
  private args: string[] = [];
  /** Leading white space of `window` already seen after a call of a section. */
  private spaceSeen = 0;
  private readonly section: boolean;
  /** Turns arguments written in another syntax than JSON into JSON (none: they are JSON). */
  private decoder: ArgumentsDecoder | undefined;

  /** `work`: counts the characters examined (for tests; default a counter of its own). */
  constructor(
    private readonly syntax: CallSyntax,
    private readonly tools: ReadonlyMap<string, unknown>,
    private readonly work: ScanWork = { chars: 0 },
  ) {
    this.section = syntax.sectionOpen !== "";
    this.step = this.section ? "sectionOpen" : "callOpen";
    const brace = syntax.trigger.indexOf("{");
    if (syntax.jsonObject && !this.section && brace !== -1) {
      // The trigger opened the object itself (`{"name": "`): parse it from its brace.
      this.window = syntax.trigger.slice(brace);
      this.step = "jsonHead";
    }
  }

  /**
   * Takes all of `more`; returns the parsed events, and `ended` (the text after the calls, to be
   * parsed as text again) once the calls are over.
   */
  push(more: string): { out: ParsedOutput[]; ended?: string } {
    this.window += more;
    if (more) this.raw.push(more);
    const out: ParsedOutput[] = [];
    for (;;) {
      const result = this.advance(out);
      if (result === "more") return { out };
      if (result === "end") {
        out.push({ type: "calls_end" });
        const rest = this.window;
        this.window = "";
        return { out, ended: rest };
      }
      if (result === "mismatch") {
        // Not a call after all: hand back the text as it was written up to where it stopped
        // fitting (after the calls already released, whose text is theirs; with the trigger at
        // least, so the same trigger is not read again); the rest is read as text again.
        const all = (this.released ? "" : this.syntax.trigger) + this.raw.join("");
        const kept = Math.max(
          this.released ? 0 : this.syntax.trigger.length,
          all.length - this.window.length,
        );
        if (kept > 0) out.push({ type: "text", text: all.slice(0, kept) });
        out.push({ type: "calls_end" });
        this.window = "";
        this.raw = [];
        return { out, ended: all.slice(kept) };
      }
    }
  }

  finish(): ParsedOutput[] {
    return [];
  }

  /** The text after the trigger still to be matched for `literal` (the part the trigger did not cover). */
  private rest(literal: string): string {
    const trigger = this.syntax.trigger;
    const at = literal.indexOf(trigger);
    return !this.consumedAny && at !== -1 ? literal.slice(at + trigger.length) : literal;
  }

  private advance(out: ParsedOutput[]): "ok" | "more" | "end" | "mismatch" {
    const syntax = this.syntax;
    switch (this.step) {
      case "sectionOpen": {
        const r = this.match(() => this.rest(syntax.sectionOpen));
        if (r !== "ok") return r;
        this.step = "callOpen";
        return "ok";
      }
      case "callOpen": {
        const r = this.match(() => {
          const open = this.rest(syntax.callOpen);
          // JSON-object calls: up to the object's `{` (a tag like `<tool_call>`, or nothing in a section).
          return syntax.jsonObject ? open.slice(0, open.indexOf("{")) : open;
        });
        if (r !== "ok") return r;
        this.step = syntax.jsonObject ? "jsonHead" : "name";
        return "ok";
      }
      case "name": {
        if (syntax.messages) return this.harmonyName(out);
        // White space after the name's end (Qwen3-Coder's `>\n`) is the arguments' to skip.
        const nameEnd = syntax.nameEnd.trimEnd() || syntax.nameEnd;
        const end = this.bounded(nameEnd);
        if (end === -1) return this.window.length > NAME_LIMIT ? "mismatch" : "more";
        this.name = this.window.slice(0, end).trim();
        if (!/^[\w.:-]{1,128}$/.test(this.name)) return "mismatch";
        this.consume(end + nameEnd.length);
        out.push({ type: "call_start", name: this.name });
        return this.startArgs();
      }
      case "jsonHead":
        return this.jsonHead(out);
      case "whole":
        return this.whole(out);
      case "args":
        return this.decoder ? this.decoded(out) : this.jsonArgs(out);
      case "jsonTail": {
        const r = this.match(() => "}");
        if (r !== "ok") return r;
        this.step = "callClose";
        return "ok";
      }
      case "callClose": {
        const r = this.match(() =>
          syntax.jsonObject ? syntax.callClose.slice(syntax.callClose.indexOf("}") + 1) : syntax.callClose,
        );
        if (r !== "ok") return r;
        this.step = "afterCall";
        this.spaceSeen = 0;
        return this.section ? "ok" : "end";
      }
      case "afterCall":
        return this.afterCall();
    }
  }

  /**
   * The head of a JSON-object call, `{"name": "NAME", "arguments": `: the arguments then stream.
   * Another key order (or a head that never completes) is read as one object, released whole.
   */
  private jsonHead(out: ParsedOutput[]): "ok" | "more" | "mismatch" {
    this.skipSpace();
    // Decided on the first HEAD_LIMIT characters and one more, however the text was split.
    const text = this.window.slice(0, HEAD_LIMIT + 1);
    this.work.chars += text.length;
    const head = HEAD.exec(text);
    if (!head) {
      if (!FIRST_KEY_SO_FAR.test(text)) return "mismatch";
      return text.length > HEAD_LIMIT ? this.startWhole() : "more";
    }
    if (head[1] === "name" && head[2] === undefined) {
      // The name's value or the second key is not complete yet.
      if (!NAME_SO_FAR.test(text.slice(head[0].length))) return this.startWhole();
      return text.length > HEAD_LIMIT ? this.startWhole() : "more";
    }
    if (head[1] === "name" && (head[4] === "arguments" || head[4] === "parameters")) {
      try {
        this.name = JSON.parse(`"${head[3]}"`) as string;
      } catch {
        return "mismatch";
      }
      this.consume(head[0].length);
      out.push({ type: "call_start", name: this.name });
      return this.startArgs();
    }
    return this.startWhole();
  }

  private startWhole(): "ok" {
    this.step = "whole";
    this.value = new JsonValueEnd();
    this.args = [];
    return "ok";
  }

  /** A JSON-object call in another key order: released whole once its object is complete. */
  private whole(out: ParsedOutput[]): "ok" | "more" | "mismatch" {
    const end = this.readValue();
    if (end === null) return "mismatch";
    if (end === -1) return "more";
    let call: { name?: unknown; arguments?: unknown; parameters?: unknown };
    try {
      call = JSON.parse(this.args.join(""));
    } catch {
      return "mismatch";
    }
    const args = call.arguments ?? call.parameters ?? {};
    if (typeof call.name !== "string" || !/^[\w.:-]{1,128}$/.test(call.name)) return "mismatch";
    const text = typeof args === "string" ? args : JSON.stringify(args);
    out.push({ type: "call_start", name: call.name });
    out.push({ type: "call_delta", delta: text });
    out.push({ type: "call", name: call.name, arguments: text });
    this.release();
    this.step = "callClose";
    return "ok";
  }

  /**
   * Reads the window into the JSON value being read (into `args`), consuming it: the index where
   * the value ended in the window before, -1 while it goes on, null when no value starts here.
   */
  private readValue(): number | null {
    const text = this.window;
    const end = this.value!.read(text);
    if (end === null) return null;
    const part = end === -1 ? text : text.slice(0, end);
    this.work.chars += part.length;
    if (part) this.args.push(part);
    this.consume(part.length);
    return end;
  }

  /** JSON arguments, streamed as they are written. */
  private jsonArgs(out: ParsedOutput[]): "ok" | "more" | "mismatch" {
    if (!this.value) {
      this.skipSpace();
      if (this.window === "") return "more";
      this.value = new JsonValueEnd();
    }
    const before = this.args.length;
    const end = this.readValue();
    if (end === null) return "mismatch";
    if (this.args.length > before) out.push({ type: "call_delta", delta: this.args.at(-1)! });
    if (end === -1) return "more";
    out.push({ type: "call", name: this.name, arguments: this.args.join("") });
    this.release();
    this.step = this.syntax.jsonObject ? "jsonTail" : "callClose";
    return "ok";
  }

  /**
   * A Harmony recipient: the name, then the rest of the header up to its end, in any of the forms
   * the model writes (`<|constrain|>json`, ` json`, `<|channel|>commentary json`).
   */
  private harmonyName(out: ParsedOutput[]): "ok" | "more" | "mismatch" {
    const headerEnd = this.syntax.messages!.headerEnd;
    const end = this.bounded(headerEnd);
    if (end === -1) return this.window.length > NAME_LIMIT ? "mismatch" : "more";
    const name = /^\s*([\w.:-]{1,128})/.exec(this.window.slice(0, end));
    if (!name) return "mismatch";
    this.name = name[1]!;
    this.consume(end + headerEnd.length);
    out.push({ type: "call_start", name: this.name });
    return this.startArgs();
  }

  /**
   * Where `marker` ends a name in the window, looked for in the first {@link NAME_LIMIT}
   * characters and one more: decided on that much, however the text was split. -1: not there.
   */
  private bounded(marker: string): number {
    const head = this.window.slice(0, NAME_LIMIT + 1);
    const end = head.indexOf(marker);
    this.work.chars += searched(head, marker, 0, end);
    return end === -1 || end + marker.length > head.length ? -1 : end;
  }

  /** Arguments in another syntax than JSON, streamed as the JSON they decode to. */
  private decoded(out: ParsedOutput[]): "ok" | "more" | "mismatch" {
    const read = this.decoder!.push(this.window);
    this.window = "";
    if (read.json) {
      out.push({ type: "call_delta", delta: read.json });
      this.args.push(read.json);
    }
    if (read.mismatch) {
      this.window = read.rest ?? "";
      return "mismatch";
    }
    if (read.rest === undefined) return "more";
    out.push({ type: "call", name: this.name, arguments: this.args.join("") });
    this.window = read.rest;
    this.release();
    this.step = "callClose";
    return "ok";
  }

  private startArgs(): "ok" {
    this.skipSpace();
    this.args = [];
    this.value = undefined;
    this.step = "args";
    const schema = this.tools.get(this.name);
    this.decoder =
      this.syntax.args === "xml"
        ? new XmlArgumentsDecoder(schema, this.work)
        : this.syntax.args === "gemma"
          ? new GemmaArgumentsDecoder(this.work)
          : undefined;
    return "ok";
  }

  /** After a call of a section: the next call, the section's end, or something else (the calls end). */
  private afterCall(): "ok" | "more" | "end" | "mismatch" {
    const syntax = this.syntax;
    const between = syntax.between.trim();
    const close = syntax.sectionClose.trim();
    const open = syntax.callOpen.trim();
    // The white space stays in the window: text after a section without a closing marker keeps it.
    let space = this.spaceSeen;
    while (space < this.window.length && /\s/.test(this.window[space]!)) space++;
    this.work.chars += space - this.spaceSeen + 1;
    this.spaceSeen = space;
    const rest = this.window.slice(space);
    if (rest === "") return "more";
    if (between && rest.startsWith(between)) {
      this.consume(space + between.length);
      this.step = "callOpen";
      return "ok";
    }
    if (!between && open && rest.startsWith(open)) {
      this.step = "callOpen";
      return "ok";
    }
    if (close && rest.startsWith(close)) {
      this.consume(space + close.length);
      return "end";
    }
    if ([between, open, close].some((marker) => marker.startsWith(rest))) return "more";
    // A section without a closing marker ends where something else starts.
    return close ? "mismatch" : "end";
  }

  /** A call was read: a mismatch from here on hands back only the text after it. */
  private release(): void {
    this.released = true;
    this.raw = this.window ? [this.window] : [];
  }

  /** Matches the literal `of()` gives (asked once per step), consuming what matches. */
  private match(of: () => string): "ok" | "more" | "mismatch" {
    this.literal ??= new LiteralMatch(of());
    const { result, used } = this.literal.read(this.window);
    this.work.chars += used + 1;
    this.consume(used);
    if (result !== "more") this.literal = undefined;
    return result;
  }

  private skipSpace(): void {
    let at = 0;
    while (at < this.window.length && /\s/.test(this.window[at]!)) at++;
    this.work.chars += at;
    this.consume(at);
  }

  private consume(length: number): void {
    if (length <= 0) return;
    this.window = this.window.slice(length);
    this.consumedAny = true;
  }
}

/**
 * Matches a literal as it streams in, white space-insensitively at its edges and between its
 * words: white space before each word is skipped, none after the last one is. A literal that is
 * only white space skips all of it, up to the next character; an empty one matches at once (it
 * skips none: what is there depends on how the text was split).
 */
class LiteralMatch {
  private readonly words: string[];
  private readonly spaceOnly: boolean;
  private word = 0;
  private matched = 0;

  constructor(literal: string) {
    this.words = literal.split(/\s+/).filter((word) => word !== "");
    this.spaceOnly = this.words.length === 0 && literal !== literal.trimEnd();
  }

  /** Reads `text`: the result and how much of `text` it used. */
  read(text: string): { result: "ok" | "more" | "mismatch"; used: number } {
    let at = 0;
    while (this.word < this.words.length && at < text.length) {
      const ch = text[at]!;
      if (this.matched === 0 && /\s/.test(ch)) {
        at++;
        continue;
      }
      const word = this.words[this.word]!;
      if (ch !== word[this.matched]) return { result: "mismatch", used: at };
      at++;
      this.matched++;
      if (this.matched === word.length) {
        this.word++;
        this.matched = 0;
      }
    }
    if (this.word < this.words.length) return { result: "more", used: at };
    if (this.spaceOnly) {
      while (at < text.length && /\s/.test(text[at]!)) at++;
      if (at === text.length) return { result: "more", used: at };
    }
    return { result: "ok", used: at };
  }
}

/**
 * Finds where a JSON value ends as its text streams in, reading each character once: an object
 * or array at its closing bracket, a string at its closing quote, another scalar at the next
 * delimiter. Tracks strings and escapes; does not validate.
 */
export class JsonValueEnd {
  private state: "space" | "nested" | "string" | "bare" = "space";
  private depth = 0;
  /** In a string inside an object or array. */
  private inString = false;
  private escaped = false;

  /**
   * Reads `text`, the value's next piece: the index in it just past the value, -1 while the value
   * goes on, null when no value can start here.
   */
  read(text: string): number | null {
    for (let i = 0; i < text.length; i++) {
      const ch = text[i]!;
      switch (this.state) {
        case "space":
          if (/\s/.test(ch)) break;
          if (ch === "{" || ch === "[") {
            this.state = "nested";
            this.depth = 1;
          } else if (ch === '"') this.state = "string";
          else if (ch === "," || ch === "}" || ch === "]") return null;
          else this.state = "bare";
          break;
        case "nested":
          if (this.inString) {
            if (this.escaped) this.escaped = false;
            else if (ch === "\\") this.escaped = true;
            else if (ch === '"') this.inString = false;
          } else if (ch === '"') this.inString = true;
          else if (ch === "{" || ch === "[") this.depth++;
          else if (ch === "}" || ch === "]") {
            this.depth--;
            if (this.depth === 0) return i + 1;
          }
          break;
        case "string":
          if (this.escaped) this.escaped = false;
          else if (ch === "\\") this.escaped = true;
          else if (ch === '"') return i + 1;
          break;
        case "bare":
          if (ch === "," || ch === "}" || ch === "]" || /\s/.test(ch)) return i;
          break;
      }
    }
    return -1;
  }
}
