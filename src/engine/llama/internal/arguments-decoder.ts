/**
 * Turns a call's arguments, as the model writes them in its template's syntax, into JSON text
 * while they stream (Qwen3-Coder's XML parameters, Gemma 4's values).
 */
export interface ArgumentsDecoder {
  /**
   * Reads `text`: all of the arguments so far, from their start (it only grows between calls).
   * Returns the JSON text decoded so far (it only grows) and, once the arguments are complete,
   * `end`: the index in `text` just after them. Null when the text cannot be arguments.
   */
  read(text: string): { json: string; end?: number } | null;
}

/** Length of the longest end of `text` that is a proper prefix of `marker`. */
export function partialSuffix(text: string, marker: string): number {
  for (let n = Math.min(marker.length - 1, text.length); n > 0; n--) {
    if (text.endsWith(marker.slice(0, n))) return n;
  }
  return 0;
}

/** `text` as the inside of a JSON string. */
export function jsonStringBody(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

/** The JSON Schema types a value of `schema` may have (all of them when it does not say). */
export function schemaTypes(schema: unknown, depth = 0): Set<string> {
  const all = new Set(["string", "number", "integer", "boolean", "null", "object", "array"]);
  if (depth > 8 || typeof schema !== "object" || schema === null || Array.isArray(schema)) return all;
  const s = schema as Record<string, unknown>;
  const values = "const" in s ? [s.const] : Array.isArray(s.enum) ? s.enum : undefined;
  if (values) return new Set(values.map(jsonType));
  const union = (s.anyOf ?? s.oneOf) as unknown;
  if (Array.isArray(union) && union.length > 0) {
    return new Set(union.flatMap((option) => [...schemaTypes(option, depth + 1)]));
  }
  if (typeof s.type === "string") return new Set([s.type]);
  if (Array.isArray(s.type)) return new Set(s.type.map(String));
  if (typeof s.properties === "object") return new Set(["object"]);
  return all;
}

function jsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

/** Whether a JSON value's type is among `types` (an integer is a number). */
export function typeAllowed(value: unknown, types: Set<string>): boolean {
  const type = jsonType(value);
  if (type === "number") return types.has("number") || (types.has("integer") && Number.isInteger(value));
  return types.has(type);
}
