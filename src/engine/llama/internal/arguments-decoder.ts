/**
 * Turns a call's arguments, as the model writes them in its template's syntax, into JSON text
 * while they stream (Qwen3-Coder's XML parameters, Gemma 4's values).
 *
 * A decoder reads each piece once and keeps its own state: the work for a piece is proportional to
 * the piece (plus a bounded look at what it holds back), never to the arguments so far.
 */
export interface ArgumentsDecoder {
  /** Reads the next piece of the arguments (the first starts them). */
  push(more: string): DecodedPiece;
}

export interface DecodedPiece {
  /** The JSON text the piece decodes to (up to where it stops fitting), to append to the earlier pieces'. */
  json: string;
  /** Once the arguments are complete, the text pushed after them; on a mismatch, the text from where it stops fitting. */
  rest?: string;
  /** The text cannot be arguments, from `rest` on. */
  mismatch?: true;
}

/**
 * Characters a parser has examined, counted where it scans, so tests can check that the work of
 * a stream grows with its length, not with its square.
 */
export interface ScanWork {
  chars: number;
}

/** Characters `text.indexOf(needle, from)` examines when it returns `at`. */
export function searched(text: string, needle: string, from: number, at: number): number {
  return at === -1 ? Math.max(0, text.length - from) : at - from + needle.length;
}

/**
 * The part of `text` up to `upTo` that can be re-encoded on its own: it does not end inside a
 * surrogate pair (the pair is encoded once its second half has arrived).
 */
export function wholeCharacters(text: string, upTo: number): number {
  const last = text.charCodeAt(upTo - 1);
  return upTo > 0 && last >= 0xd800 && last <= 0xdbff ? upTo - 1 : upTo;
}

/** Length of the longest end of `text` that is a proper prefix of `marker`. */
export function partialSuffix(text: string, marker: string, work?: ScanWork): number {
  if (work) work.chars += Math.min(text.length, marker.length - 1);
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
