import { CodedError } from "../../protocol/errors.js";

/**
 * Why a tool call failed. The code is a closed union so the agent loop and the UIs branch on it,
 * never on message text; the message is written for the model: it says what was wrong and what to
 * do instead.
 */
export type ToolErrorCode =
  | "invalid_arguments"
  | "path_outside_workspace"
  | "path_protected"
  | "not_found"
  | "patch_rejected"
  | "not_allowed"
  | "denied"
  | "timeout"
  | "sandbox_unavailable"
  /** An MCP server failed to start, stopped, or died during the call. */
  | "mcp_unavailable"
  | "failed";

export class ToolError extends CodedError<ToolErrorCode> {
  constructor(code: ToolErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(code, message, options);
    this.name = "ToolError";
  }
}
