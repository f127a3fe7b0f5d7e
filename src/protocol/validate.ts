import type { z } from "zod";
import { SparkError, type SparkErrorCode } from "./errors.js";

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
  const first = result.error.issues[0] as Issue | undefined;
  const issue = first && deepest(first);
  const param = issue ? formatPath(issue.path) : null;
  const where = param ? ` at '${param}'` : "";
  throw new SparkError(code, `Invalid value${where}: ${issue?.message ?? "does not match the schema"}.`, {
    param,
  });
}

interface Issue {
  path: PropertyKey[];
  message: string;
  code?: string;
  errors?: Issue[][];
}

/**
 * For a value matching no branch of a union, the most specific complaint is the one from the branch
 * that got furthest, so `input[0].role` is named rather than just `input`.
 */
function deepest(issue: Issue): Issue {
  if (issue.code !== "invalid_union" || !issue.errors?.length) return issue;
  let best: Issue | undefined;
  for (const branch of issue.errors) {
    const first = branch[0];
    if (!first) continue;
    const candidate = deepest(first);
    if (!best || candidate.path.length > best.path.length) best = candidate;
  }
  if (!best || best.path.length === 0) return issue;
  return { ...best, path: [...issue.path, ...best.path] };
}

function formatPath(path: readonly PropertyKey[]): string | null {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else out += out ? `.${String(key)}` : String(key);
  }
  return out || null;
}
