/** Longest tool name the Responses API (and other agents) accept. */
export const TOOL_NAME_MAX = 64;

const TOOL_NAME = /^[A-Za-z0-9_-]+$/;

/**
 * The model-facing name of an MCP server's tool, `mcp__SERVER__TOOL` (the convention other agents
 * use, so prompts carry over); null when the tool's name has characters outside [A-Za-z0-9_-] or
 * the whole would pass 64 characters (such a tool is skipped, with a notice).
 */
export function mcpToolName(server: string, tool: string): string | null {
  if (!TOOL_NAME.test(tool)) return null;
  const name = `mcp__${server}__${tool}`;
  return name.length <= TOOL_NAME_MAX ? name : null;
}
