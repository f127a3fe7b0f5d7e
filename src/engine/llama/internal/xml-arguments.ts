import {
  type ArgumentsDecoder,
  jsonStringBody,
  partialSuffix,
  schemaTypes,
  typeAllowed,
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

/** Decodes the parameters to a JSON object, streaming string values as they are written. */
export class XmlArgumentsDecoder implements ArgumentsDecoder {
  private pos = 0;
  private json = "{";
  private count = 0;
  private param: { start: number; emitted: number; stream: boolean; types: Set<string> } | undefined;

  /** `schema`: the tool's parameters, to type the values (undefined: typed by how they read). */
  constructor(private readonly schema: unknown) {}

  read(text: string): { json: string; end?: number } | null {
    for (;;) {
      if (this.param) {
        if (!this.readValue(text)) return { json: this.json };
        continue;
      }
      let at = this.pos;
      while (at < text.length && /\s/.test(text[at]!)) at++;
      const rest = text.slice(at);
      if (rest.startsWith(FUNCTION_CLOSE)) {
        this.json += "}";
        return { json: this.json, end: at };
      }
      if (!rest.startsWith(OPEN)) {
        return OPEN.startsWith(rest) || FUNCTION_CLOSE.startsWith(rest) ? { json: this.json } : null;
      }
      const close = rest.indexOf(">", OPEN.length);
      if (close === -1)
        return rest.length > OPEN.length + 128 || rest.includes("\n") ? null : { json: this.json };
      const key = rest.slice(OPEN.length, close).trim();
      if (key === "") return null;
      let start = at + close + 1;
      // The value starts after the line break that follows the tag: wait to see it.
      if (start >= text.length) return { json: this.json };
      if (text[start] === "\n") start++;
      const types = schemaTypes(propertySchema(this.schema, key));
      const stream = types.size === 1 && types.has("string");
      this.json += `${this.count > 0 ? ", " : ""}${JSON.stringify(key)}: ${stream ? '"' : ""}`;
      this.count++;
      this.param = { start, emitted: start, stream, types };
    }
  }

  /** Reads the open parameter's value; true once it is closed. */
  private readValue(text: string): boolean {
    const param = this.param!;
    // Nothing emitted can be part of the closing tag: the search starts there.
    const close = text.indexOf(CLOSE, param.emitted);
    if (close === -1) {
      if (param.stream) {
        const hold = Math.max(partialSuffix(text, `\n${CLOSE}`), partialSuffix(text, CLOSE));
        this.emit(text, text.length - hold);
      }
      return false;
    }
    const end = close > param.start && text[close - 1] === "\n" ? close - 1 : close;
    if (param.stream) {
      this.emit(text, end);
      this.json += '"';
    } else {
      this.json += typedValue(text.slice(param.start, end), param.types);
    }
    this.pos = close + CLOSE.length;
    this.param = undefined;
    return true;
  }

  private emit(text: string, upTo: number): void {
    const param = this.param!;
    if (upTo <= param.emitted) return;
    this.json += jsonStringBody(text.slice(param.emitted, upTo));
    param.emitted = upTo;
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
