/**
 * JSON Schema to GBNF (llama.cpp's grammar format), for the arguments of a tool call: whatever the
 * model samples under the grammar parses as JSON and matches the schema's structure (types,
 * properties, required keys, enums, items, unions). Constraints GBNF cannot express cheaply
 * (string lengths, numeric ranges, patterns) are left to the tool's own validation, and so is
 * anything the converter does not know (`$ref`, `not`, ...): it becomes "any JSON value".
 *
 * The layout is the one chat templates render arguments in (Python's `json.dumps`: `", "` and
 * `": "`, nothing else between tokens), so a call re-rendered in the next prompt is the same text
 * the model wrote and its KV state is reused.
 */

/** Named GBNF rules, built up as schemas are converted; shared rules are emitted once. */
export class GbnfRules {
  private readonly rules = new Map<string, string>();

  constructor() {
    this.rules.set("json-char", String.raw`[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})`);
    this.rules.set("json-string", String.raw`"\"" json-char* "\""`);
    this.rules.set("json-integer", `"-"? ([0-9] | [1-9] [0-9]{1,15})`);
    this.rules.set("json-number", `json-integer ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,4})?`);
    this.rules.set("json-boolean", `"true" | "false"`);
    this.rules.set("json-null", `"null"`);
    this.rules.set(
      "json-value",
      "json-object | json-array | json-string | json-number | json-boolean | json-null",
    );
    this.rules.set(
      "json-object",
      `"{" (json-string ": " json-value (", " json-string ": " json-value)*)? "}"`,
    );
    this.rules.set("json-array", `"[" (json-value (", " json-value)*)? "]"`);
  }

  /** Adds `name` with `body` unless a rule of that name exists (shared rules); returns the name. */
  ensure(name: string, body: string): string {
    if (!this.rules.has(name)) this.rules.set(name, body);
    return name;
  }

  /** Adds a rule under a fresh name derived from `hint`; returns the name. */
  add(hint: string, body: string): string {
    const base =
      hint
        .replace(/[^a-zA-Z0-9-]+/g, "-")
        .replace(/^-+|-+$/g, "")
        .toLowerCase() || "r";
    let name = base;
    for (let n = 2; this.rules.has(name); n++) name = `${base}-${n}`;
    this.rules.set(name, body);
    return name;
  }

  /**
   * Reserves a fresh name derived from `hint` for a rule defined later with {@link define}
   * (recursive schemas refer to a rule before its body is known); returns the name.
   */
  reserve(hint: string): string {
    return this.add(hint, "");
  }

  /** Sets the body of a rule {@link reserve} named. */
  define(name: string, body: string): void {
    this.rules.set(name, body);
  }

  /** The grammar text, with `root` first. */
  toString(): string {
    const lines: string[] = [];
    const root = this.rules.get("root");
    if (root !== undefined) lines.push(`root ::= ${root}`);
    for (const [name, body] of this.rules) if (name !== "root") lines.push(`${name} ::= ${body}`);
    return `${lines.join("\n")}\n`;
  }
}

/** A GBNF string literal for `text`. */
export function gbnfLiteral(text: string): string {
  let out = '"';
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (ch === '"' || ch === "\\") out += `\\${ch}`;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, "0")}`;
    else out += ch;
  }
  return `${out}"`;
}

/**
 * How values are written: JSON, or another syntax a template renders arguments in (Gemma 4's
 * `{key:<|"|>text<|"|>,n:1}`). Structure follows the schema either way.
 */
export interface ValueLayout {
  /** Any string. */
  string: string;
  /** Any value, for schemas the converter does not know. */
  any: string;
  /** An object with any properties. */
  anyObject: string;
  /** The literal text of a constant. */
  constant(value: unknown): string;
  /** The text before a property's value (`"key": `). */
  key(name: string): string;
  /** Between array items and between properties. */
  comma: string;
  /** Properties sorted by name, as templates that `dictsort` them render them; else declaration order. */
  sortKeys: boolean;
}

export const JSON_LAYOUT: ValueLayout = Object.freeze({
  string: "json-string",
  any: "json-value",
  anyObject: "json-object",
  constant: (value: unknown) => JSON.stringify(value),
  key: (name: string) => `${JSON.stringify(name)}: `,
  comma: ", ",
  sortKeys: false,
});

/** Deeper schemas than this become "any value" (bounds work on untrusted schemas). */
const MAX_DEPTH = 16;

/** Converts `schema` into rules; returns the GBNF expression for a value of it. */
export function schemaRule(
  rules: GbnfRules,
  schema: unknown,
  hint: string,
  depth = 0,
  layout: ValueLayout = JSON_LAYOUT,
): string {
  if (depth > MAX_DEPTH || schema === true || !isObject(schema)) return layout.any;
  if ("const" in schema) return gbnfLiteral(layout.constant(schema.const));
  if (Array.isArray(schema.enum) && schema.enum.length > 0) {
    return rules.add(
      `${hint}-enum`,
      schema.enum.map((value) => gbnfLiteral(layout.constant(value))).join(" | "),
    );
  }
  const union = (schema.anyOf ?? schema.oneOf) as unknown;
  if (Array.isArray(union) && union.length > 0) {
    const parts = union.map((option, i) =>
      schemaRule(
        rules,
        { ...schema, anyOf: undefined, oneOf: undefined, ...asObject(option) },
        `${hint}-${i}`,
        depth + 1,
        layout,
      ),
    );
    return rules.add(`${hint}-union`, parts.join(" | "));
  }
  const type = schema.type;
  if (Array.isArray(type)) {
    const parts = type.map((t) =>
      schemaRule(rules, { ...schema, type: t }, `${hint}-${String(t)}`, depth + 1, layout),
    );
    return rules.add(`${hint}-types`, parts.join(" | "));
  }
  switch (type) {
    case "string":
      return layout.string;
    case "integer":
      return "json-integer";
    case "number":
      return "json-number";
    case "boolean":
      return "json-boolean";
    case "null":
      return "json-null";
    case "array": {
      const items = schemaRule(rules, schema.items, `${hint}-item`, depth + 1, layout);
      return rules.add(hint, `"[" (${items} (${gbnfLiteral(layout.comma)} ${items})*)? "]"`);
    }
    case "object":
      return objectRule(rules, schema, hint, depth, layout);
    default:
      return isObject(schema.properties) ? objectRule(rules, schema, hint, depth, layout) : layout.any;
  }
}

/**
 * An object with its declared properties in declaration order (or sorted, see the layout),
 * required and optional alike, and no others unless `additionalProperties` allows them.
 */
function objectRule(
  rules: GbnfRules,
  schema: Record<string, unknown>,
  hint: string,
  depth: number,
  layout: ValueLayout,
): string {
  const properties = isObject(schema.properties) ? Object.entries(schema.properties) : [];
  if (layout.sortKeys) properties.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (properties.length === 0) {
    // Tool arguments: a schema that declares no properties takes none, unless it says otherwise.
    const open = schema.additionalProperties === true || isObject(schema.additionalProperties);
    return open ? layout.anyObject : rules.add(hint, `"{}"`);
  }
  const required = new Set(Array.isArray(schema.required) ? schema.required.map(String) : []);
  const pairs = properties.map(([key, value]) => ({
    rule: `${gbnfLiteral(layout.key(key))} ${schemaRule(rules, value, `${hint}-${key}`, depth + 1, layout)}`,
    required: required.has(key),
  }));
  // tail(i): the properties from i on, each preceded by a comma (at least one came before them).
  const tails: string[] = [];
  for (let i = pairs.length - 1; i >= 0; i--) {
    const pair = `${gbnfLiteral(layout.comma)} ${pairs[i]!.rule}`;
    const next = tails[0] ?? "";
    tails.unshift(pairs[i]!.required ? `${pair} ${next}`.trim() : `(${pair})? ${next}`.trim());
  }
  const tailRules = tails.map((body, i) => (body ? rules.add(`${hint}-tail${i}`, body) : ""));
  // head: the first property present, then the tail after it. Properties before the first
  // required one may each be the first present.
  const heads: string[] = [];
  for (let i = 0; i < pairs.length; i++) {
    heads.push(`${pairs[i]!.rule} ${tailRules[i + 1] ?? ""}`.trim());
    if (pairs[i]!.required) break;
  }
  const anyRequired = pairs.some((pair) => pair.required);
  const body = `(${heads.join(" | ")})${anyRequired ? "" : "?"}`;
  return rules.add(hint, `"{" ${body} "}"`);
}

/**
 * A rule for any text that does not contain `delimiter` (what comes before a closing tag), as the
 * states of a string-matching automaton: each state is how much of the delimiter the text ends
 * with, and no character may complete it.
 */
export function textUntilRule(rules: GbnfRules, delimiter: string, name: string): string {
  const states = delimiter.length;
  const chars = [...new Set(delimiter)];
  const state = (i: number) => (i === 0 ? name : `${name}-${i}`);
  // next(i, c): the longest prefix of the delimiter that the matched prefix plus `c` ends with.
  const next = (i: number, c: string): number => {
    const seen = delimiter.slice(0, i) + c;
    for (let k = Math.min(seen.length, states); k > 0; k--)
      if (seen.endsWith(delimiter.slice(0, k))) return k;
    return 0;
  };
  for (let i = 0; i < states; i++) {
    const byNext = new Map<number, string[]>();
    for (const c of chars) {
      const to = next(i, c);
      if (to < states) byNext.set(to, [...(byNext.get(to) ?? []), c]);
    }
    const alternatives = [`[^${chars.map(classChar).join("")}] ${state(0)}`];
    for (const [to, cs] of byNext) alternatives.push(`[${cs.map(classChar).join("")}] ${state(to)}`);
    rules.ensure(state(i), `(${alternatives.join(" | ")})?`);
  }
  return name;
}

/** A character inside a GBNF character class, escaped unless it is a letter or digit. */
function classChar(ch: string): string {
  if (/^[a-zA-Z0-9]$/.test(ch)) return ch;
  const code = ch.codePointAt(0)!;
  return code <= 0xff
    ? `\\x${code.toString(16).padStart(2, "0")}`
    : `\\u${code.toString(16).padStart(4, "0")}`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function asObject(value: unknown): Record<string, unknown> {
  return isObject(value) ? value : {};
}
