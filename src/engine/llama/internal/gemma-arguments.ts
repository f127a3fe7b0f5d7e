import {
  type ArgumentsDecoder,
  type DecodedPiece,
  jsonStringBody,
  partialSuffix,
  type ScanWork,
  searched,
  wholeCharacters,
} from "./arguments-decoder.js";
import { type GbnfRules, gbnfLiteral, textUntilRule, type ValueLayout } from "./json-schema-grammar.js";

/**
 * Gemma 4's call arguments, as its template renders them: `{key:<|"|>text<|"|>,n:1,on:true,
 * list:[...],obj:{...}}`, keys bare and sorted, strings between `<|"|>` marks, other values as in
 * JSON.
 */
const QUOTE = '<|"|>';

/** Gemma 4's value syntax for the schema grammar; defines its shared rules in `rules`. */
export function gemmaLayout(rules: GbnfRules): ValueLayout {
  const text = textUntilRule(rules, QUOTE, "gemma-text");
  rules.ensure("gemma-string", `${gbnfLiteral(QUOTE)} ${text} ${gbnfLiteral(QUOTE)}`);
  rules.ensure("gemma-key", "[a-zA-Z_] [a-zA-Z0-9_]{0,63}");
  rules.ensure(
    "gemma-value",
    "gemma-object | gemma-array | gemma-string | json-number | json-boolean | json-null",
  );
  rules.ensure("gemma-object", `"{" (gemma-key ":" gemma-value ("," gemma-key ":" gemma-value)*)? "}"`);
  rules.ensure("gemma-array", `"[" (gemma-value ("," gemma-value)*)? "]"`);
  return {
    string: "gemma-string",
    any: "gemma-value",
    anyObject: "gemma-object",
    constant: toGemmaText,
    key: (name) => `${name}:`,
    comma: ",",
    sortKeys: true,
  };
}

/** A JSON value in Gemma 4's syntax (keys sorted, as the template's `dictsort` renders them). */
export function toGemmaText(value: unknown): string {
  if (typeof value === "string") return `${QUOTE}${value}${QUOTE}`;
  if (Array.isArray(value)) return `[${value.map(toGemmaText).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${key}:${toGemmaText(item)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

type State = "key" | "value" | "after";

/**
 * Decodes the members of the arguments object (the text after its `{`) to a JSON object, streaming
 * strings as they are written. The arguments end before the `}` that closes the object. Holds back
 * only a key or scalar being written, or what may start a string's closing mark: each piece is
 * read once.
 */
export class GemmaArgumentsDecoder implements ArgumentsDecoder {
  /** Text not yet decoded. */
  private window = "";
  private started = false;
  private state: State = "key";
  private readonly open: ("object" | "array")[] = ["object"];
  /** In a string's text. */
  private inString = false;
  /** An array was just opened: a `]` here closes it empty. */
  private arrayOpened = false;
  private json = "";

  constructor(private readonly work: ScanWork = { chars: 0 }) {}

  push(more: string): DecodedPiece {
    this.window += more;
    this.json = this.started ? "" : "{";
    this.started = true;
    for (;;) {
      if (this.inString) {
        const text = this.window;
        const close = text.indexOf(QUOTE);
        this.work.chars += searched(text, QUOTE, 0, close);
        const upTo =
          close === -1 ? wholeCharacters(text, text.length - partialSuffix(text, QUOTE, this.work)) : close;
        if (upTo > 0) this.json += jsonStringBody(text.slice(0, upTo));
        if (close === -1) {
          this.consume(upTo);
          return { json: this.json };
        }
        this.emit('"');
        this.consume(close + QUOTE.length);
        this.inString = false;
        this.state = "after";
        continue;
      }
      let at = 0;
      while (at < this.window.length && /\s/.test(this.window[at]!)) at++;
      this.work.chars += at;
      this.consume(at);
      if (this.window === "") return { json: this.json };
      const rest = this.window;
      const ch = rest[0]!;
      const closing = ch === "}" || ch === "]";
      if (closing && (this.state !== "value" || this.arrayOpened)) {
        if ((ch === "}") !== (this.open.at(-1) === "object")) return this.mismatch();
        this.open.pop();
        this.emit(ch);
        if (this.open.length === 0) return { json: this.json, rest };
        this.consume(1);
        this.state = "after";
        continue;
      }
      const step =
        this.state === "key" ? this.key(rest) : this.state === "value" ? this.value(rest) : this.after(ch);
      if (step === "more") return { json: this.json };
      if (step === "mismatch") return this.mismatch();
    }
  }

  /** The arguments stop fitting at the window's start. */
  private mismatch(): DecodedPiece {
    return { json: this.json, rest: this.window, mismatch: true };
  }

  private key(rest: string): "ok" | "more" | "mismatch" {
    let key: string;
    let length: number;
    // A key and what follows it in 257 characters: decided on that much, however the text was split.
    const head = rest.slice(0, 257);
    this.work.chars += head.length;
    if (head.startsWith(QUOTE)) {
      const close = head.indexOf(QUOTE, QUOTE.length);
      if (close === -1 || head[close + QUOTE.length] === undefined)
        return rest.length > 256 ? "mismatch" : "more";
      if (head[close + QUOTE.length] !== ":") return "mismatch";
      key = head.slice(QUOTE.length, close);
      length = close + QUOTE.length + 1;
    } else if (QUOTE.startsWith(head)) {
      return "more";
    } else {
      const colon = /^[^:{}[\],<>]*/.exec(head)![0].length;
      if (colon === head.length) return rest.length > 256 ? "mismatch" : "more";
      key = head.slice(0, colon).trim();
      if (rest[colon] !== ":" || key === "") return "mismatch";
      length = colon + 1;
    }
    this.emit(`${JSON.stringify(key)}: `);
    this.consume(length);
    this.state = "value";
    return "ok";
  }

  private value(rest: string): "ok" | "more" | "mismatch" {
    if (rest.startsWith(QUOTE)) {
      this.emit('"');
      this.consume(QUOTE.length);
      this.inString = true;
      return "ok";
    }
    if (QUOTE.startsWith(rest)) return "more";
    const ch = rest[0]!;
    if (ch === "{" || ch === "[") {
      this.open.push(ch === "{" ? "object" : "array");
      this.emit(ch);
      this.arrayOpened = ch === "[";
      this.consume(1);
      this.state = ch === "{" ? "key" : "value";
      return "ok";
    }
    // A scalar of up to 64 characters: decided on that much, however the text was split.
    const head = rest.slice(0, 65);
    const length = /^[^,}\]]*/.exec(head)![0].length;
    this.work.chars += head.length;
    if (length === head.length) return rest.length > 64 ? "mismatch" : "more";
    const word = rest.slice(0, length).trim();
    if (word === "") return "mismatch";
    let scalar: unknown = word;
    try {
      scalar = JSON.parse(word);
    } catch {
      // A bare word: a string.
    }
    this.emit(JSON.stringify(scalar));
    this.consume(length);
    this.state = "after";
    return "ok";
  }

  private after(ch: string): "ok" | "mismatch" {
    if (ch !== ",") return "mismatch";
    this.emit(", ");
    this.consume(1);
    this.state = this.open.at(-1) === "object" ? "key" : "value";
    return "ok";
  }

  /** Appends JSON that is not an array's opening: the array is no longer empty, or is closed. */
  private emit(json: string): void {
    this.json += json;
    this.arrayOpened = false;
  }

  private consume(length: number): void {
    if (length > 0) this.window = this.window.slice(length);
  }
}
