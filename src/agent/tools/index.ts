import { applyPatchTool } from "./apply-patch.js";
import { delegateTool } from "./delegate.js";
import { listDirTool } from "./list-dir.js";
import { loadSkillTool } from "./load-skill.js";
import { readFileTool } from "./read-file.js";
import { searchTool } from "./search.js";
import { shellTool } from "./shell.js";
import type { Tool } from "./tool.js";

export interface ToolsForOptions {
  /** Offer the delegate tool (a sub-agent tier is configured). Default: false. */
  delegate?: boolean;
  /** Offer load_skill (the session has skills). Default: false. */
  skills?: boolean;
}

/**
 * The tools offered to the model, in the order they are listed to it. The list is the same on
 * every turn of a conversation, since it is part of the prompt prefix the server keeps evaluated:
 * `shell` is always listed, and each of its commands runs only with the person's approval.
 */
// biome-ignore lint/suspicious/noExplicitAny: a registry holds tools of every argument type
export function toolsFor(options: ToolsForOptions = {}): Tool<any>[] {
  // biome-ignore lint/suspicious/noExplicitAny: as above
  const tools: Tool<any>[] = [readFileTool, listDirTool, searchTool, applyPatchTool, shellTool];
  if (options.skills) tools.push(loadSkillTool);
  if (options.delegate) tools.push(delegateTool);
  return tools;
}
