import type { ApprovalRequest } from "./tools/tool.js";

/**
 * How side effects are approved. `ask`: the person approves each command (the default a UI
 * should start in). `auto`: commands run without asking, for a person who opted in.
 */
export type ApprovalPolicy = "ask" | "auto";

export type ApprovalDecision = "auto-approve" | "ask-user" | "reject";

/** Decides, without I/O, what happens to a request under a policy. */
export function approvalFor(request: ApprovalRequest, policy: ApprovalPolicy): ApprovalDecision {
  if (request.command.trim() === "") return "reject";
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
