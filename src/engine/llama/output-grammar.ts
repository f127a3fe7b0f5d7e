import { SparkError } from "../../protocol/errors.js";
import type { OutputFormat } from "../../protocol/output-format.js";
import { GbnfRules, gbnfLiteral } from "./internal/json-schema-grammar.js";

/**
 * Structured output's grammar: JSON Schema to GBNF for a whole answer. Unlike a tool call's
 * arguments (where the tool validates what the grammar leaves open), the answer must conform to
 * the schema as the client will check it, so every keyword that constrains a value is either
 * enforced here or refused: {@link outputGrammar} throws a 400 naming the keyword's path
 * (`schema.properties.email.format`). Annotations (`title`, `description`, `default`, ...) and
 * keywords JSON Schema does not define are ignored, as JSON Schema itself ignores them.
 *
 * Enforced: `type` (one or a list), `enum`, `const`, `anyOf`, local `$ref` (`#`, `#/$defs/...`,
 * `#/definitions/...`, recursion included), `properties`, `required`, `additionalProperties`,
 * `items`, `minItems`/`maxItems`, `minLength`/`maxLength`, and integer `minimum`/`maximum`
 * (exclusive too); a number's `minimum: 0`. Objects are written with their declared properties
 * in declaration order (what a schema with more allowed is still satisfied by).
 */
export function outputGrammar(format: OutputFormat): string {
  const rules = new GbnfRules();
  rules.add("root", outputRule(rules, format));
  return rules.toString();
}

/** {@link outputGrammar}'s root expression, its rules added to `rules` (beside a call grammar's). */
export function outputRule(rules: GbnfRules, format: OutputFormat): string {
  if (format.type === "json_object") return "json-object";
  return new SchemaConverter(rules, format.schema).value(format.schema, "schema", "answer");
}

/** The longest `maxLength`/`maxItems` (and `minLength`/`minItems`) the grammar spells out. */
export const MAX_REPEAT = 4096;
/** All repetition bounds of one schema together (each becomes that many grammar rules). */
const MAX_REPEAT_TOTAL = 16_384;
/** Nested subschemas followed (anyOf, items, properties) before a schema counts as too deep. */
const MAX_DEPTH = 32;

/** Keywords that constrain a value and that this grammar cannot enforce. */
const UNENFORCEABLE = new Set([
  "pattern",
  "format",
  "oneOf",
  "allOf",
  "not",
  "if",
  "then",
  "else",
  "multipleOf",
  "uniqueItems",
  "contains",
  "minContains",
  "maxContains",
  "prefixItems",
  "additionalItems",
  "unevaluatedItems",
  "unevaluatedProperties",
  "patternProperties",
  "propertyNames",
  "minProperties",
  "maxProperties",
  "dependencies",
  "dependentRequired",
  "dependentSchemas",
  "$dynamicRef",
  "$recursiveRef",
]);

/** What may sit beside `$ref`: the reference itself, definitions and annotations. */
const BESIDE_REF = new Set([
  "$ref",
  "$defs",
  "definitions",
  "$schema",
  "$id",
  "$comment",
  "title",
  "description",
  "default",
  "examples",
  "deprecated",
  "readOnly",
  "writeOnly",
]);

const SAFE = Number.MAX_SAFE_INTEGER;

class SchemaConverter {
  private readonly refs = new Map<string, string>();
  private repeatBudget = MAX_REPEAT_TOTAL;
  /** References being defined with no `[` or `{` written since. */
  private unwrapped = new Set<string>();

  constructor(
    private readonly rules: GbnfRules,
    private readonly root: Record<string, unknown>,
  ) {}

  /** The GBNF expression for a value of `schema`, found at `path` (for errors). */
  value(schema: unknown, path: string, hint: string, depth = 0): string {
    if (depth > MAX_DEPTH) refuse(path, `nests subschemas more than ${MAX_DEPTH} deep`);
    if (schema === true) return "json-value";
    if (schema === false) refuse(path, "is the schema `false`, which no value matches");
    if (!isObject(schema)) refuse(path, "is not a JSON Schema object");
    const unenforceable = Object.keys(schema).find((keyword) => UNENFORCEABLE.has(keyword));
    if (unenforceable)
      refuse(`${path}.${unenforceable}`, `uses '${unenforceable}', which cannot be enforced`);
    if (typeof schema.$ref === "string") {
      // The reference is what gets enforced: a constraint beside it would silently not be.
      const beside = Object.keys(schema).find((keyword) => !BESIDE_REF.has(keyword));
      if (beside) refuse(`${path}.${beside}`, "sits beside '$ref', where it cannot be enforced");
      return this.ref(schema.$ref, `${path}.$ref`, depth);
    }
    if ("$ref" in schema) refuse(`${path}.$ref`, "is not a string");
    if ("const" in schema) return gbnfLiteral(JSON.stringify(schema.const));
    if ("enum" in schema) {
      if (!Array.isArray(schema.enum) || schema.enum.length === 0)
        refuse(`${path}.enum`, "is not a non-empty array");
      return this.rules.add(
        `${hint}-enum`,
        schema.enum.map((value) => gbnfLiteral(JSON.stringify(value))).join(" | "),
      );
    }
    if ("anyOf" in schema) {
      const options = schema.anyOf;
      if (!Array.isArray(options) || options.length === 0)
        refuse(`${path}.anyOf`, "is not a non-empty array");
      const { anyOf: _, ...rest } = schema;
      const parts = options.map((option, i) => {
        const where = `${path}.anyOf[${i}]`;
        if (!isObject(option)) return this.value(option, where, `${hint}-${i}`, depth + 1);
        if (typeof option.$ref === "string") {
          // A reference takes nothing from around it (see $ref above), so there must be nothing.
          const around = Object.keys(rest).find((keyword) => !BESIDE_REF.has(keyword));
          if (around)
            refuse(`${path}.${around}`, "sits beside an anyOf of '$ref's, where it cannot be enforced");
          return this.value(option, where, `${hint}-${i}`, depth + 1);
        }
        return this.value({ ...rest, ...option }, where, `${hint}-${i}`, depth + 1);
      });
      return this.rules.add(`${hint}-any`, parts.join(" | "));
    }
    const type = schema.type;
    if (Array.isArray(type)) {
      if (type.length === 0) refuse(`${path}.type`, "is an empty list");
      const parts = type.map((t, i) =>
        this.typed({ ...schema, type: t }, t, `${path}.type[${i}]`, path, `${hint}-${String(t)}`, depth),
      );
      return this.rules.add(`${hint}-types`, parts.join(" | "));
    }
    if (type !== undefined) return this.typed(schema, type, `${path}.type`, path, hint, depth);
    if (isObject(schema.properties) || "additionalProperties" in schema || "required" in schema) {
      return this.object(schema, path, hint, depth);
    }
    if ("items" in schema || "minItems" in schema || "maxItems" in schema) {
      return this.array(schema, path, hint, depth);
    }
    return "json-value";
  }

  private typed(
    schema: Record<string, unknown>,
    type: unknown,
    typePath: string,
    path: string,
    hint: string,
    depth: number,
  ): string {
    switch (type) {
      case "string":
        return this.string(schema, path, hint);
      case "integer":
        return this.integer(schema, path, hint);
      case "number":
        return this.number(schema, path);
      case "boolean":
        return "json-boolean";
      case "null":
        return "json-null";
      case "array":
        return this.array(schema, path, hint, depth);
      case "object":
        return this.object(schema, path, hint, depth);
      default:
        return refuse(typePath, `names an unknown type ${JSON.stringify(type)}`);
    }
  }

  private ref(ref: string, path: string, depth: number): string {
    // A reference back to itself before any `[` or `{` would be a left-recursive rule.
    if (this.unwrapped.has(ref)) refuse(path, `is '${ref}', which refers to itself without nesting`);
    const known = this.refs.get(ref);
    if (known) return known;
    const target = this.resolve(ref, path);
    const name = this.rules.reserve(`ref-${ref.split("/").at(-1) || "root"}`);
    this.refs.set(ref, name);
    this.unwrapped.add(ref);
    this.rules.define(name, this.value(target, path, name, depth + 1));
    this.unwrapped.delete(ref);
    return name;
  }

  /** Converts inside a `[` or `{`: references being defined there may recur. */
  private nested<T>(convert: () => T): T {
    const outer = this.unwrapped;
    this.unwrapped = new Set();
    try {
      return convert();
    } finally {
      this.unwrapped = outer;
    }
  }

  /** A local reference: `#`, or a JSON pointer into the root schema (`#/$defs/Node`). */
  private resolve(ref: string, path: string): unknown {
    if (ref === "#") return this.root;
    if (!ref.startsWith("#/"))
      refuse(path, `is '${ref}': only references inside the schema (#/...) can be followed`);
    let at: unknown = this.root;
    for (const raw of ref.slice(2).split("/")) {
      const key = raw.replaceAll("~1", "/").replaceAll("~0", "~");
      if (!isObject(at) || !Object.hasOwn(at, key))
        refuse(path, `is '${ref}', which names nothing in the schema`);
      at = at[key];
    }
    return at;
  }

  private string(schema: Record<string, unknown>, path: string, hint: string): string {
    const min = this.count(schema, "minLength", path) ?? 0;
    const max = this.count(schema, "maxLength", path);
    if (min === 0 && max === undefined) return "json-string";
    if (max !== undefined && max < min) refuse(`${path}.maxLength`, "is below minLength");
    return this.rules.add(`${hint}-string`, String.raw`"\"" json-char{${min},${max ?? ""}} "\""`);
  }

  private integer(schema: Record<string, unknown>, path: string, hint: string): string {
    let low = bound(schema, "minimum", path);
    let high = bound(schema, "maximum", path);
    const exclusiveLow = bound(schema, "exclusiveMinimum", path);
    const exclusiveHigh = bound(schema, "exclusiveMaximum", path);
    if (
      low === undefined &&
      high === undefined &&
      exclusiveLow === undefined &&
      exclusiveHigh === undefined
    ) {
      return "json-integer";
    }
    low = Math.max(
      Math.ceil(low ?? -SAFE),
      exclusiveLow === undefined ? -SAFE : Math.floor(exclusiveLow) + 1,
      -SAFE,
    );
    high = Math.min(
      Math.floor(high ?? SAFE),
      exclusiveHigh === undefined ? SAFE : Math.ceil(exclusiveHigh) - 1,
      SAFE,
    );
    if (low > high) refuse(`${path}.minimum`, "leaves no integer between the bounds");
    return this.rules.add(`${hint}-int`, integerRange(low, high));
  }

  private number(schema: Record<string, unknown>, path: string): string {
    for (const keyword of ["maximum", "exclusiveMinimum", "exclusiveMaximum"]) {
      if (keyword in schema)
        refuse(`${path}.${keyword}`, `on a number cannot be enforced (an integer's can)`);
    }
    if (!("minimum" in schema)) return "json-number";
    if (schema.minimum !== 0)
      refuse(`${path}.minimum`, "on a number can only be 0 (an integer's can be any)");
    return this.rules.ensure(
      "json-number-nonnegative",
      `([0-9] | [1-9] [0-9]{1,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,4})?`,
    );
  }

  private array(schema: Record<string, unknown>, path: string, hint: string, depth: number): string {
    if (Array.isArray(schema.items))
      refuse(`${path}.items`, "is a list (tuple validation cannot be enforced)");
    const item =
      "items" in schema
        ? this.nested(() => this.value(schema.items, `${path}.items`, `${hint}-item`, depth + 1))
        : "json-value";
    const min = this.count(schema, "minItems", path) ?? 0;
    const max = this.count(schema, "maxItems", path);
    if (max !== undefined && max < min) refuse(`${path}.maxItems`, "is below minItems");
    const comma = gbnfLiteral(", ");
    if (max === 0) return this.rules.add(hint, `"[]"`);
    const more =
      max === undefined
        ? `(${comma} ${item}){${Math.max(0, min - 1)},}`
        : `(${comma} ${item}){${Math.max(0, min - 1)},${max - 1}}`;
    const items = `${item} ${more}`;
    return this.rules.add(hint, min === 0 ? `"[" (${items})? "]"` : `"[" ${items} "]"`);
  }

  private object(schema: Record<string, unknown>, path: string, hint: string, depth: number): string {
    if ("properties" in schema && !isObject(schema.properties))
      refuse(`${path}.properties`, "is not an object");
    const declared = isObject(schema.properties) ? Object.entries(schema.properties) : [];
    if ("required" in schema && !Array.isArray(schema.required)) refuse(`${path}.required`, "is not a list");
    const required = new Set(Array.isArray(schema.required) ? schema.required.map(String) : []);
    const pairs = declared.map(([key, value]) => ({
      rule: `${gbnfLiteral(`${JSON.stringify(key)}: `)} ${this.nested(() => this.value(value, `${path}.properties.${key}`, `${hint}-${key}`, depth + 1))}`,
      required: required.has(key),
    }));
    // A required key the schema does not describe takes any value.
    for (const key of required) {
      if (!declared.some(([name]) => name === key)) {
        pairs.push({ rule: `${gbnfLiteral(`${JSON.stringify(key)}: `)} json-value`, required: true });
      }
    }
    const extra = schema.additionalProperties;
    if (pairs.length === 0) {
      if (extra === false) return this.rules.add(hint, `"{}"`);
      if (!isObject(extra)) return "json-object";
      const value = this.nested(() =>
        this.value(extra, `${path}.additionalProperties`, `${hint}-value`, depth + 1),
      );
      const pair = `json-string ": " ${value}`;
      return this.rules.add(hint, `"{" (${pair} (", " ${pair})*)? "}"`);
    }
    // tail(i): the properties from i on, each after a comma (one came before them).
    const tails: string[] = [];
    for (let i = pairs.length - 1; i >= 0; i--) {
      const pair = `${gbnfLiteral(", ")} ${pairs[i]!.rule}`;
      const next = tails[0] ?? "";
      tails.unshift(pairs[i]!.required ? `${pair} ${next}`.trim() : `(${pair})? ${next}`.trim());
    }
    const tailRules = tails.map((body, i) => (body ? this.rules.add(`${hint}-tail${i}`, body) : ""));
    // The first property present: any up to and including the first required one.
    const heads: string[] = [];
    for (let i = 0; i < pairs.length; i++) {
      heads.push(`${pairs[i]!.rule} ${tailRules[i + 1] ?? ""}`.trim());
      if (pairs[i]!.required) break;
    }
    const anyRequired = pairs.some((pair) => pair.required);
    return this.rules.add(hint, `"{" (${heads.join(" | ")})${anyRequired ? "" : "?"} "}"`);
  }

  /** A non-negative integer keyword within the repetition bounds, or undefined when absent. */
  private count(schema: Record<string, unknown>, keyword: string, path: string): number | undefined {
    if (!(keyword in schema)) return undefined;
    const value = schema[keyword];
    if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
      refuse(`${path}.${keyword}`, "is not a non-negative integer");
    }
    if (value > MAX_REPEAT)
      refuse(`${path}.${keyword}`, `is above ${MAX_REPEAT}, the most the grammar spells out`);
    this.repeatBudget -= value;
    if (this.repeatBudget < 0) {
      refuse(
        `${path}.${keyword}`,
        `brings the schema's length and item bounds above ${MAX_REPEAT_TOTAL} together`,
      );
    }
    return value;
  }
}

function bound(schema: Record<string, unknown>, keyword: string, path: string): number | undefined {
  if (!(keyword in schema)) return undefined;
  const value = schema[keyword];
  if (typeof value !== "number" || !Number.isFinite(value)) refuse(`${path}.${keyword}`, "is not a number");
  return value;
}

/** GBNF for the decimal integers from `low` to `high` (safe integers), without leading zeros. */
export function integerRange(low: number, high: number): string {
  if (high < 0) return `"-" (${naturalRange(-high, -low)})`;
  if (low >= 0) return naturalRange(low, high);
  return `"-" (${naturalRange(1, -low)}) | ${naturalRange(0, high)}`;
}

/** `low..high` (0 <= low <= high), split by the number of digits. */
function naturalRange(low: number, high: number): string {
  const parts: string[] = [];
  for (let digits = String(low).length; digits <= String(high).length; digits++) {
    const from = Math.max(low, digits === 1 ? 0 : 10 ** (digits - 1));
    const to = Math.min(high, 10 ** digits - 1);
    if (from <= to) parts.push(sameLength(String(from), String(to)));
  }
  return parts.map((part) => `(${part})`).join(" | ");
}

/** The digit strings from `low` to `high`, both `n` digits long. */
function sameLength(low: string, high: string): string {
  if (low === high) return gbnfLiteral(low);
  const rest = low.length - 1;
  const [a, b] = [Number(low[0]), Number(high[0])];
  if (rest === 0) return `[${a}-${b}]`;
  const lowRest = low.slice(1);
  const highRest = high.slice(1);
  if (a === b) return `"${a}" (${sameLength(lowRest, highRest)})`;
  const any = `[0-9]{${rest}}`;
  const lowAll = /^0*$/.test(lowRest);
  const highAll = /^9*$/.test(highRest);
  const parts: string[] = [];
  const first = lowAll ? a : a + 1;
  const last = highAll ? b : b - 1;
  if (!lowAll) parts.push(`"${a}" (${sameLength(lowRest, "9".repeat(rest))})`);
  if (first <= last) parts.push(`[${first}-${last}] ${any}`);
  if (!highAll) parts.push(`"${b}" (${sameLength("0".repeat(rest), highRest)})`);
  return parts.join(" | ");
}

function refuse(param: string, problem: string): never {
  throw new SparkError("invalid_request", `Structured output: '${param}' ${problem}.`, { param });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
