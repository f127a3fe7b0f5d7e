import { type Patch, parseV4aPatch } from "../../protocol/v4a-patch.js";
import { ToolError } from "./tool-error.js";

/**
 * Parses the patch an `apply_patch` call carries (`protocol/v4a-patch.ts`, the parser every face
 * previews with). Throws a ToolError `invalid_arguments` naming the 1-based line at fault.
 */
export function parsePatch(text: string): Patch {
  const result = parseV4aPatch(text);
  if (result.ok) return result.patch;
  const { line, message } = result.error;
  throw new ToolError(
    "invalid_arguments",
    `Invalid patch, line ${line}: ${message} See the apply_patch description for the format.`,
  );
}
