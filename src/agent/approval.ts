import type { ApprovalRequest } from "./tools/tool.js";

/**
 * How side effects are approved. `ask`: the person approves each command and each call of an
 * untrusted MCP server (the default a UI should start in). `auto`: both run without asking, for a
 * person who opted in.
 */
export type ApprovalPolicy = "ask" | "auto";

export type ApprovalDecision = "auto-approve" | "ask-user" | "reject";

/** Decides, without I/O, what happens to a request under a policy. */
export function approvalFor(request: ApprovalRequest, policy: ApprovalPolicy): ApprovalDecision {
  if (request.kind === "shell" && request.command.trim() === "") return "reject";
  // The person trusted this MCP server in their own config: its calls never ask.
  if (request.kind === "mcp" && request.trusted) return "auto-approve";
  switch (policy) {
    case "auto":
      return "auto-approve";
    case "ask":
      return "ask-user";
    default: {
      const unknown: never = policy;
      throw new Error(`Unknown approval policy: ${String(unknown)}`);
    }
  }
}
