import { type ArgumentsDecoder, jsonStringBody, partialSuffix } from "./arguments-decoder.js";
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
 * strings as they are written. The arguments end before the `}` that closes the object.
 */
export class GemmaArgumentsDecoder implements ArgumentsDecoder {
  private pos = 0;
  private json = "{";
  private state: State = "key";
  private readonly open: ("object" | "array")[] = ["object"];
  /** Where the open string's text starts and how far it was emitted. */
  private string: { emitted: number } | undefined;

  read(text: string): { json: string; end?: number } | null {
    for (;;) {
      if (this.string) {
        const close = text.indexOf(QUOTE, this.string.emitted);
        const upTo = close === -1 ? text.length - partialSuffix(text, QUOTE) : close;
        if (upTo > this.string.emitted) this.json += jsonStringBody(text.slice(this.string.emitted, upTo));
        this.string.emitted = Math.max(this.string.emitted, upTo);
        if (close === -1) return { json: this.json };
        this.json += '"';
        this.pos = close + QUOTE.length;
        this.string = undefined;
        this.state = "after";
        continue;
      }
      while (this.pos < text.length && /\s/.test(text[this.pos]!)) this.pos++;
      if (this.pos >= text.length) return { json: this.json };
      const rest = text.slice(this.pos);
      const ch = rest[0]!;
      const closing = ch === "}" || ch === "]";
      // An empty array closes where its first value would be.
      if (closing && (this.state !== "value" || this.json.endsWith("["))) {
        if ((ch === "}") !== (this.open.at(-1) === "object")) return null;
        this.open.pop();
        this.json += ch;
        if (this.open.length === 0) return { json: this.json, end: this.pos };
        this.pos++;
        this.state = "after";
        continue;
      }
      const step =
        this.state === "key" ? this.key(rest) : this.state === "value" ? this.value(rest) : this.after(ch);
      if (step === "more") return { json: this.json };
      if (step === "mismatch") return null;
    }
  }

  private key(rest: string): "ok" | "more" | "mismatch" {
    let key: string;
    let length: number;
    if (rest.startsWith(QUOTE)) {
      const close = rest.indexOf(QUOTE, QUOTE.length);
      if (close === -1 || rest[close + QUOTE.length] === undefined)
        return rest.length > 256 ? "mismatch" : "more";
      if (rest[close + QUOTE.length] !== ":") return "mismatch";
      key = rest.slice(QUOTE.length, close);
      length = close + QUOTE.length + 1;
    } else if (QUOTE.startsWith(rest)) {
      return "more";
    } else {
      const colon = /^[^:{}[\],<>]*/.exec(rest)![0].length;
      if (colon === rest.length) return rest.length > 256 ? "mismatch" : "more";
      key = rest.slice(0, colon).trim();
      if (rest[colon] !== ":" || key === "") return "mismatch";
      length = colon + 1;
    }
    this.json += `${JSON.stringify(key)}: `;
    this.pos += length;
    this.state = "value";
    return "ok";
  }

  private value(rest: string): "ok" | "more" | "mismatch" {
    if (rest.startsWith(QUOTE)) {
      this.json += '"';
      this.pos += QUOTE.length;
      this.string = { emitted: this.pos };
      return "ok";
    }
    if (QUOTE.startsWith(rest)) return "more";
    const ch = rest[0]!;
    if (ch === "{" || ch === "[") {
      this.open.push(ch === "{" ? "object" : "array");
      this.json += ch;
      this.pos++;
      this.state = ch === "{" ? "key" : "value";
      return "ok";
    }
    const length = /^[^,}\]]*/.exec(rest)![0].length;
    if (length === rest.length) return rest.length > 64 ? "mismatch" : "more";
    const word = rest.slice(0, length).trim();
    if (word === "") return "mismatch";
    let scalar: unknown = word;
    try {
      scalar = JSON.parse(word);
    } catch {
      // A bare word: a string.
    }
    this.json += JSON.stringify(scalar);
    this.pos += length;
    this.state = "after";
    return "ok";
  }

  private after(ch: string): "ok" | "mismatch" {
    if (ch !== ",") return "mismatch";
    this.json += ", ";
    this.pos++;
    this.state = this.open.at(-1) === "object" ? "key" : "value";
    return "ok";
  }
}
