import type { z } from "zod";
import { type SparkErrorCode, SparkError } from "./errors.js";

/**
 * Checks untrusted data against a schema and returns it typed, or throws one SparkError naming the
 * first offending field (`param`) the way the OpenAI API does (`input[2].content`).
 */
export function validate<S extends z.ZodType>(
  schema: S,
  value: unknown,
  code: SparkErrorCode = "invalid_request",
): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const param = issue ? formatPath(issue.path) : null;
  const where = param ? ` at '${param}'` : "";
  throw new SparkError(code, `Invalid value${where}: ${issue?.message ?? "does not match the schema"}.`, {
    param,
  });
}

function formatPath(path: readonly PropertyKey[]): string | null {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else out += out ? `.${String(key)}` : String(key);
  }
  return out || null;
}
