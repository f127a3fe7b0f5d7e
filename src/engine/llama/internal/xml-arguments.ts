import {
  type ArgumentsDecoder,
  type DecodedPiece,
  jsonStringBody,
  partialSuffix,
  type ScanWork,
  schemaTypes,
  searched,
  typeAllowed,
  wholeCharacters,
} from "./arguments-decoder.js";
import { type GbnfRules, gbnfLiteral, schemaRule, textUntilRule } from "./json-schema-grammar.js";

/**
 * Qwen3-Coder's call arguments: one `<parameter=KEY>\nVALUE\n</parameter>\n` per argument, as its
 * template renders them and llama.cpp parses them. A string is written raw, any other value as
 * JSON; a value whose schema allows a string and other types is typed when it reads as one of the
 * others (llama.cpp's rule too).
 */
const OPEN = "<parameter=";
const CLOSE = "</parameter>";
const FUNCTION_CLOSE = "</function>";

/**
 * The GBNF for the parameters of a tool with `schema`: its properties in declaration order (the
 * optional ones may be left out), strings as free text up to the closing tag, other values as
 * JSON of their schema. Empty when the tool takes no arguments.
 */
export function xmlParametersRule(rules: GbnfRules, schema: unknown, hint: string): string {
  const s = isObject(schema) ? schema : {};
  const properties = isObject(s.properties) ? Object.entries(s.properties) : [];
  const required = new Set(Array.isArray(s.required) ? s.required.map(String) : []);
  const parts = properties.map(([key, value]) => {
    const one = `${gbnfLiteral(`${OPEN}${key}>\n`)} ${xmlValueRule(rules, value, `${hint}-${key}`)} ${gbnfLiteral(`\n${CLOSE}\n`)}`;
    return required.has(key) ? one : `(${one})?`;
  });
  if (properties.length === 0 && (s.additionalProperties === true || isObject(s.additionalProperties))) {
    const name = rules.ensure("xml-name", "[a-zA-Z0-9_.:-]{1,64}");
    parts.push(
      `(${gbnfLiteral(OPEN)} ${name} ${gbnfLiteral(">\n")} ${xmlText(rules)} ${gbnfLiteral(`\n${CLOSE}\n`)})*`,
    );
  }
  return parts.length > 0 ? rules.add(hint, parts.join(" ")) : "";
}

function xmlValueRule(rules: GbnfRules, schema: unknown, hint: string): string {
  const types = schemaTypes(schema);
  if (!types.has("string")) return schemaRule(rules, schema, hint);
  const s = isObject(schema) ? schema : {};
  const values = "const" in s ? [s.const] : Array.isArray(s.enum) ? s.enum : undefined;
  if (values?.every((value) => typeof value === "string")) {
    return rules.add(`${hint}-enum`, values.map((value) => gbnfLiteral(value as string)).join(" | "));
  }
  return xmlText(rules);
}

function xmlText(rules: GbnfRules): string {
  return textUntilRule(rules, `\n${CLOSE}`, "xml-text");
}

/** A parameter being read: how its value is written to the JSON. */
interface OpenParameter {
  /** A string-only value, streamed as it is written; else the value is typed once it is whole. */
  stream: boolean;
  types: Set<string>;
  /** The value so far, when it is not streamed. */
  value: string[];
}

/**
 * Decodes the parameters to a JSON object, streaming string values as they are written. Holds
 * back only what may be the start of a tag: each piece is read once.
 */
export class XmlArgumentsDecoder implements ArgumentsDecoder {
  /** Text not yet decoded: a tag being written, or the end of a value that may start its closing tag. */
  private window = "";
  private started = false;
  private count = 0;
  private param: OpenParameter | undefined;
  private json = "";

  /** `schema`: the tool's parameters, to type the values (undefined: typed by how they read). */
  constructor(
    private readonly schema: unknown,
    private readonly work: ScanWork = { chars: 0 },
  ) {}

  push(more: string): DecodedPiece {
    this.window += more;
    this.json = this.started ? "" : "{";
    this.started = true;
    for (;;) {
      if (this.param) {
        if (!this.readValue()) return { json: this.json };
        continue;
      }
      const step = this.readTag();
      if (step === "ok") continue;
      if (step === "end") {
        this.json += "}";
        return { json: this.json, rest: this.window };
      }
      return step === "more" ? { json: this.json } : { json: this.json, rest: this.window, mismatch: true };
    }
  }

  /** Reads up to the next parameter's value, or to the end of the parameters. */
  private readTag(): "ok" | "more" | "end" | "mismatch" {
    let at = 0;
    while (at < this.window.length && /\s/.test(this.window[at]!)) at++;
    this.work.chars += at;
    this.consume(at);
    const rest = this.window;
    this.work.chars += Math.min(rest.length, FUNCTION_CLOSE.length);
    if (rest.startsWith(FUNCTION_CLOSE)) return "end";
    if (!rest.startsWith(OPEN)) {
      return OPEN.startsWith(rest) || FUNCTION_CLOSE.startsWith(rest) ? "more" : "mismatch";
    }
    // A key of up to 128 characters on one line: decided on that much, however the text was split.
    const tag = rest.slice(0, OPEN.length + 129);
    const close = tag.indexOf(">", OPEN.length);
    this.work.chars += tag.length;
    if (tag.slice(OPEN.length, close === -1 ? undefined : close).includes("\n")) return "mismatch";
    if (close === -1) return rest.length > OPEN.length + 128 ? "mismatch" : "more";
    const key = rest.slice(OPEN.length, close).trim();
    if (key === "") return "mismatch";
    let start = close + 1;
    // The value starts after the line break that follows the tag: wait to see it.
    if (start >= rest.length) return "more";
    if (rest[start] === "\n") start++;
    const types = schemaTypes(propertySchema(this.schema, key));
    const stream = types.size === 1 && types.has("string");
    this.json += `${this.count > 0 ? ", " : ""}${JSON.stringify(key)}: ${stream ? '"' : ""}`;
    this.count++;
    this.param = { stream, types, value: [] };
    this.consume(start);
    return "ok";
  }

  /** Reads the open parameter's value; true once it is closed. */
  private readValue(): boolean {
    const param = this.param!;
    const text = this.window;
    // Nothing decoded can be part of the closing tag: the window starts after what was.
    const close = text.indexOf(CLOSE);
    this.work.chars += searched(text, CLOSE, 0, close);
    if (close === -1) {
      const hold = Math.max(
        partialSuffix(text, `\n${CLOSE}`, this.work),
        partialSuffix(text, CLOSE, this.work),
      );
      this.take(wholeCharacters(text, text.length - hold));
      return false;
    }
    // The line break before the closing tag is the template's (one held back is still here).
    const end = close > 0 && text[close - 1] === "\n" ? close - 1 : close;
    this.take(end);
    if (param.stream) this.json += '"';
    else this.json += typedValue(param.value.join(""), param.types);
    this.consume(close - end + CLOSE.length);
    this.param = undefined;
    return true;
  }

  /** Decodes the first `length` characters of the window as the open value. */
  private take(length: number): void {
    if (length <= 0) return;
    const part = this.window.slice(0, length);
    if (this.param!.stream) this.json += jsonStringBody(part);
    else this.param!.value.push(part);
    this.consume(length);
  }

  private consume(length: number): void {
    if (length > 0) this.window = this.window.slice(length);
  }
}

/** A value as JSON: parsed when it reads as JSON of an allowed type other than string, else a string. */
function typedValue(value: string, types: Set<string>): string {
  if (!(types.size === 1 && types.has("string"))) {
    try {
      const parsed: unknown = JSON.parse(value.trim());
      if (typeof parsed !== "string" && typeAllowed(parsed, types)) return JSON.stringify(parsed);
    } catch {
      // Not JSON: a string.
    }
  }
  return JSON.stringify(value);
}

function propertySchema(schema: unknown, key: string): unknown {
  if (!isObject(schema) || !isObject(schema.properties)) return undefined;
  return Object.hasOwn(schema.properties, key) ? schema.properties[key] : undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
