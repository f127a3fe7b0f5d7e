import { z } from "zod";
import { type Tool, ToolError } from "../tools/tool.js";
import type { McpConnection, McpListedTool } from "./mcp-connection.js";

/** Characters of a call's arguments shown in its approval request. */
export const MCP_APPROVAL_ARGUMENTS_MAX = 4096;

/** Any JSON object: the server validates its own arguments against the schema it listed. */
const argumentsSchema = z.record(z.string(), z.unknown());

/**
 * A tool of a ready MCP server as the model sees it, `mcp__SERVER__TOOL`: the server's description
 * and input schema; each call asks for approval unless the server is trusted (or the policy is
 * `auto`), then goes to the server under the turn's signal.
 */
export function mcpTool(connection: McpConnection, listed: McpListedTool): Tool<Record<string, unknown>> {
  return {
    name: listed.name,
    description: listed.description || `${listed.tool} (a tool of the MCP server ${connection.name})`,
    parameters: listed.inputSchema,
    schema: argumentsSchema,
    async run(args, ctx) {
      const json = JSON.stringify(args);
      const approved = await ctx.approve({
        kind: "mcp",
        server: connection.name,
        tool: listed.tool,
        arguments:
          json.length > MCP_APPROVAL_ARGUMENTS_MAX ? `${json.slice(0, MCP_APPROVAL_ARGUMENTS_MAX)}…` : json,
        trusted: connection.trusted,
      });
      if (!approved) {
        throw new ToolError(
          "denied",
          `The user denied this call of ${connection.name} · ${listed.tool}. Do not retry it; ask the user what to do instead.`,
        );
      }
      const result = await connection.call(listed.tool, args, ctx.signal);
      // The server's own error (isError): the model reads it and can correct the call.
      if (result.isError) throw new ToolError("failed", result.output);
      return { output: result.output, isError: false };
    },
  };
}
