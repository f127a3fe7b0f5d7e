import type { Stats } from "node:fs";
import { stat } from "node:fs/promises";
import { ToolError } from "../tool-error.js";

/** stat, with a missing path turned into a ToolError `not_found` the model can act on. */
export async function statOrNotFound(absolute: string, shown: string): Promise<Stats> {
  try {
    return await stat(absolute);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") {
      throw new ToolError(
        "not_found",
        `No file or directory "${shown}" in the workspace. Use list_dir or search to find the right path.`,
        { cause: error },
      );
    }
    throw error;
  }
}
