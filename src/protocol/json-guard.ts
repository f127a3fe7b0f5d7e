import { SparkError } from "./errors.js";

/** Bounds applied to every request body and WebSocket frame before schema validation. */
export interface JsonLimits {
  /** Largest body or frame, in bytes. Default: 8 MiB. */
  maxBytes: number;
  /** Deepest nesting of arrays and objects. Default: 32. */
  maxDepth: number;
}

export const DEFAULT_JSON_LIMITS: JsonLimits = { maxBytes: 8 * 1024 * 1024, maxDepth: 32 };

/**
 * Parses untrusted JSON text: size first (cheap), then syntax, then nesting depth. Throws a
 * SparkError (`payload_too_large`, `invalid_json`) rather than returning partial data.
 */
export function parseUntrustedJson(text: string, limits: JsonLimits = DEFAULT_JSON_LIMITS): unknown {
  if (Buffer.byteLength(text) > limits.maxBytes) {
    throw new SparkError("payload_too_large", `The request is larger than ${limits.maxBytes} bytes.`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new SparkError("invalid_json", `The body is not valid JSON: ${(error as Error).message}`);
  }
  if (nestedDeeperThan(value, limits.maxDepth)) {
    throw new SparkError("invalid_request", `The JSON is nested deeper than ${limits.maxDepth} levels.`);
  }
  return value;
}

/** Recursion is bounded by `depthLeft`, so hostile nesting cannot overflow the stack. */
function nestedDeeperThan(value: unknown, depthLeft: number): boolean {
  if (value === null || typeof value !== "object") return false;
  if (depthLeft === 0) return true;
  const children = Array.isArray(value) ? value : Object.values(value);
  return children.some((child) => nestedDeeperThan(child, depthLeft - 1));
}
