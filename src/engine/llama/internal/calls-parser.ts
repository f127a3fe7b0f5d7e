import type { ArgumentsDecoder } from "./arguments-decoder.js";
import { GemmaArgumentsDecoder } from "./gemma-arguments.js";
import type { ParsedOutput } from "./output-parser.js";
import type { CallSyntax } from "./tool-call-syntax.js";
import { XmlArgumentsDecoder } from "./xml-arguments.js";

type Step =
  | "sectionOpen"
  | "callOpen"
  | "name"
  | "jsonHead"
  | "args"
  | "jsonTail"
  | "callClose"
  | "afterCall";

/**
 * Parses what follows a trigger: one call, or a section of calls, in `syntax`. Tolerates other
 * white space, and for JSON-object calls other key order (then the call is released whole, once
 * complete). Anything that does not fit ends the calls: what was read is handed back as text.
 */
export class CallsParser {
  private text = "";
  private pos = 0;
  private step: Step;
  private name = "";
  private argsStart = 0;
  private streamed = 0;
  private callStart = 0;
  /** A call of this section was released: a mismatch hands back only the text after it. */
  private released = false;
  private readonly section: boolean;
  /** Turns arguments written in another syntax than JSON into JSON (none: they are JSON). */
  private decoder: ArgumentsDecoder | undefined;

  constructor(
    private readonly syntax: CallSyntax,
    private readonly tools: ReadonlyMap<string, unknown>,
  ) {
    this.section = syntax.sectionOpen !== "";
    this.step = this.section ? "sectionOpen" : "callOpen";
    const brace = syntax.trigger.indexOf("{");
    if (syntax.jsonObject && !this.section && brace !== -1) {
      // The trigger opened the object itself (`{"name": "`): parse it from its brace.
      this.text = syntax.trigger.slice(brace);
      this.triggerRest = this.text.length;
      this.step = "jsonHead";
    }
  }

  /** Characters of the trigger put back into `text` (handed back with it on a mismatch). */
  private readonly triggerRest: number = 0;

  /**
   * Takes all of `more`; returns the parsed events, and `ended` (the text after the calls, to be
   * parsed as text again) once the calls are over.
   */
  push(more: string): { out: ParsedOutput[]; ended?: string } {
    this.text += more;
    const out: ParsedOutput[] = [];
    for (;;) {
      const result = this.advance(out);
      if (result === "more") return { out };
      if (result === "end") {
        out.push({ type: "calls_end" });
        const rest = this.text.slice(this.pos);
        this.text = "";
        this.pos = 0;
        return { out, ended: rest };
      }
      if (result === "mismatch") {
        // Not a call after all: hand back the text as it was written (after the calls already
        // released, whose text is theirs).
        const text = this.released
          ? this.text.slice(this.callStart)
          : this.syntax.trigger + this.text.slice(this.triggerRest);
        if (text) out.push({ type: "text", text });
        out.push({ type: "calls_end" });
        this.text = "";
        this.pos = 0;
        return { out, ended: "" };
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
    return this.pos === 0 && at !== -1 ? literal.slice(at + trigger.length) : literal;
  }

  private advance(out: ParsedOutput[]): "ok" | "more" | "end" | "mismatch" {
    const syntax = this.syntax;
    switch (this.step) {
      case "sectionOpen": {
        const r = this.literal(this.rest(syntax.sectionOpen));
        if (r !== "ok") return r;
        this.step = "callOpen";
        return "ok";
      }
      case "callOpen": {
        const open = this.rest(syntax.callOpen);
        if (syntax.jsonObject) {
          // Up to the object's `{`: a tag like `<tool_call>`, or nothing in a section.
          const tag = open.slice(0, open.indexOf("{"));
          const r = this.literal(tag);
          if (r !== "ok") return r;
          this.step = "jsonHead";
          return "ok";
        }
        const r = this.literal(open);
        if (r !== "ok") return r;
        this.step = "name";
        return "ok";
      }
      case "name": {
        if (syntax.messages) return this.harmonyName(out);
        // White space after the name's end (Qwen3-Coder's `>\n`) is the arguments' to skip.
        const nameEnd = syntax.nameEnd.trimEnd() || syntax.nameEnd;
        const end = this.text.indexOf(nameEnd, this.pos);
        if (end === -1) return this.text.length - this.pos > 256 ? "mismatch" : "more";
        this.name = this.text.slice(this.pos, end).trim();
        if (!/^[\w.:-]{1,128}$/.test(this.name)) return "mismatch";
        this.pos = end + nameEnd.length;
        out.push({ type: "call_start", name: this.name });
        return this.startArgs();
      }
      case "jsonHead": {
        const head =
          /^\s*\{\s*"((?:[^"\\]|\\.)*)"\s*:\s*("((?:[^"\\]|\\.)*)"\s*,\s*"((?:[^"\\]|\\.)*)"\s*:)?/.exec(
            this.text.slice(this.pos),
          );
        if (!head) {
          return /^\s*(\{\s*("(?:[^"\\]|\\.)*"?\s*)?)?$/.test(this.text.slice(this.pos))
            ? "more"
            : "mismatch";
        }
        if (head[1] === "name" && head[2] === undefined) {
          // The name's value or the second key is not complete yet.
          const partial = this.text.slice(this.pos + head[0].length);
          return /^("(?:[^"\\]|\\.)*("\s*(,\s*("[^"]*)?)?)?)?$/.test(partial) ? "more" : this.whole(out);
        }
        if (head[1] === "name" && (head[4] === "arguments" || head[4] === "parameters")) {
          this.name = JSON.parse(`"${head[3]}"`) as string;
          this.pos += head[0].length;
          out.push({ type: "call_start", name: this.name });
          return this.startArgs();
        }
        return this.whole(out);
      }
      case "args": {
        if (this.decoder) return this.decoded(out);
        if (this.streamed === 0) {
          while (this.argsStart < this.text.length && /\s/.test(this.text[this.argsStart]!)) this.argsStart++;
          if (this.argsStart === this.text.length) return "more";
        }
        const end = endOfJsonValue(this.text, this.argsStart);
        const available = end === -1 ? this.text.length : end;
        if (available > this.argsStart + this.streamed) {
          out.push({ type: "call_delta", delta: this.text.slice(this.argsStart + this.streamed, available) });
          this.streamed = available - this.argsStart;
        }
        if (end === -1) return "more";
        out.push({ type: "call", name: this.name, arguments: this.text.slice(this.argsStart, end) });
        this.pos = end;
        this.callStart = end;
        this.released = true;
        this.step = syntax.jsonObject ? "jsonTail" : "callClose";
        return "ok";
      }
      case "jsonTail": {
        const r = this.literal("}");
        if (r !== "ok") return r;
        this.step = "callClose";
        return "ok";
      }
      case "callClose": {
        const close = syntax.jsonObject
          ? syntax.callClose.slice(syntax.callClose.indexOf("}") + 1)
          : syntax.callClose;
        const r = this.literal(close);
        if (r !== "ok") return r;
        this.step = "afterCall";
        return this.section ? "ok" : "end";
      }
      case "afterCall": {
        const between = syntax.between.trim();
        const close = syntax.sectionClose.trim();
        const rest = this.text.slice(this.pos).trimStart();
        if (rest === "") return "more";
        if (between && rest.startsWith(between)) {
          this.pos = this.text.length - rest.length + between.length;
          this.step = "callOpen";
          return "ok";
        }
        const open = syntax.callOpen.trim();
        if (!between && open && rest.startsWith(open)) {
          this.step = "callOpen";
          return "ok";
        }
        if (close && rest.startsWith(close)) {
          this.pos = this.text.length - rest.length + close.length;
          return "end";
        }
        if ([between, open, close].some((marker) => marker?.startsWith(rest))) return "more";
        // A section without a closing marker ends where something else starts.
        return close ? "mismatch" : "end";
      }
    }
  }

  /** A JSON-object call in another key order: released whole once its object is complete. */
  private whole(out: ParsedOutput[]): "ok" | "more" | "mismatch" {
    const start = this.text.indexOf("{", this.pos);
    const end = endOfJsonValue(this.text, start);
    if (end === -1) return "more";
    let call: { name?: unknown; arguments?: unknown; parameters?: unknown };
    try {
      call = JSON.parse(this.text.slice(start, end));
    } catch {
      return "mismatch";
    }
    const args = call.arguments ?? call.parameters ?? {};
    if (typeof call.name !== "string" || !/^[\w.:-]{1,128}$/.test(call.name)) return "mismatch";
    const text = typeof args === "string" ? args : JSON.stringify(args);
    out.push({ type: "call_start", name: call.name });
    out.push({ type: "call_delta", delta: text });
    out.push({ type: "call", name: call.name, arguments: text });
    this.pos = end;
    this.callStart = end;
    this.released = true;
    this.step = "callClose";
    return "ok";
  }

  /**
   * A Harmony recipient: the name, then the rest of the header up to its end, in any of the forms
   * the model writes (`<|constrain|>json`, ` json`, `<|channel|>commentary json`).
   */
  private harmonyName(out: ParsedOutput[]): "ok" | "more" | "mismatch" {
    const headerEnd = this.syntax.messages!.headerEnd;
    const end = this.text.indexOf(headerEnd, this.pos);
    if (end === -1) return this.text.length - this.pos > 256 ? "mismatch" : "more";
    const name = /^\s*([\w.:-]{1,128})/.exec(this.text.slice(this.pos, end));
    if (!name) return "mismatch";
    this.name = name[1]!;
    this.pos = end + headerEnd.length;
    out.push({ type: "call_start", name: this.name });
    return this.startArgs();
  }

  /** Arguments in another syntax than JSON, streamed as the JSON they decode to. */
  private decoded(out: ParsedOutput[]): "ok" | "more" | "mismatch" {
    const read = this.decoder!.read(this.text.slice(this.argsStart));
    if (!read) return "mismatch";
    if (read.json.length > this.streamed) {
      out.push({ type: "call_delta", delta: read.json.slice(this.streamed) });
      this.streamed = read.json.length;
    }
    if (read.end === undefined) return "more";
    out.push({ type: "call", name: this.name, arguments: read.json });
    this.pos = this.argsStart + read.end;
    this.callStart = this.pos;
    this.released = true;
    this.step = "callClose";
    return "ok";
  }

  private startArgs(): "ok" {
    while (this.pos < this.text.length && /\s/.test(this.text[this.pos]!)) this.pos++;
    this.argsStart = this.pos;
    this.streamed = 0;
    this.step = "args";
    const schema = this.tools.get(this.name);
    this.decoder =
      this.syntax.args === "xml"
        ? new XmlArgumentsDecoder(schema)
        : this.syntax.args === "gemma"
          ? new GemmaArgumentsDecoder()
          : undefined;
    return "ok";
  }

  /** Matches `literal` at the cursor, white space-insensitively at its edges and between its words. */
  private literal(literal: string): "ok" | "more" | "mismatch" {
    const words = literal.split(/\s+/).filter((word) => word !== "");
    let at = this.pos;
    const skipSpace = () => {
      while (at < this.text.length && /\s/.test(this.text[at]!)) at++;
    };
    if (words.length === 0) {
      skipSpace();
      if (at === this.text.length && literal !== literal.trimEnd()) return "more";
      this.pos = at;
      return "ok";
    }
    for (const word of words) {
      skipSpace();
      const have = this.text.slice(at, at + word.length);
      if (have.length < word.length) return word.startsWith(have) ? "more" : "mismatch";
      if (have !== word) return "mismatch";
      at += word.length;
    }
    this.pos = at;
    return "ok";
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
