import { readFile } from "node:fs/promises";
import { SparkError } from "../protocol/errors.js";
import { jsonSchemaObject } from "../protocol/output-format.js";
import { validate } from "../protocol/validate.js";

/** `spark exec`'s exit status for a `--output-schema` file it cannot use (as for other usage errors). */
export const EXIT_USAGE = 2;

/**
 * Reads `spark exec --output-schema FILE`: a JSON Schema object, within the bounds the server
 * takes (`text.format.schema`). Throws a SparkError naming the file and what is wrong with it.
 * Whether a keyword can be enforced is the model server's to say (an upstream may enforce more
 * than the embedded engine's grammar): the turn then fails with its 400.
 */
export async function readOutputSchema(file: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    const why =
      (error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (error as Error).message;
    throw new SparkError("invalid_request", `--output-schema ${file}: ${why}.`, { cause: error });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new SparkError(
      "invalid_request",
      `--output-schema ${file}: not JSON (${(error as Error).message}).`,
      {
        cause: error,
      },
    );
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new SparkError("invalid_request", `--output-schema ${file}: a JSON Schema is a JSON object.`);
  }
  try {
    return validate(jsonSchemaObject, value);
  } catch (error) {
    const why = error instanceof SparkError ? error.message : String(error);
    throw new SparkError("invalid_request", `--output-schema ${file}: ${why}`, { cause: error });
  }
}
