import type { PermissionOption, RequestPermissionResponse, ToolCallUpdate } from "@agentclientprotocol/sdk";
import { type ApprovalRequestEvent, approvalTitle, sandboxLabel } from "../../protocol/agent.js";
import { textContent } from "./acp-tool-calls.js";

/** The options a permission request offers: Spark's approvals are yes or no, once. */
export const PERMISSION_OPTIONS: PermissionOption[] = [
  { optionId: "allow", name: "Allow", kind: "allow_once" },
  { optionId: "reject", name: "Reject", kind: "reject_once" },
];

/** The tool call a permission request asks about: call `toolCallId`, as the approval describes it. */
export function permissionToolCall(approval: ApprovalRequestEvent, toolCallId: string): ToolCallUpdate {
  return {
    toolCallId,
    title: approvalTitle(approval),
    kind: approval.kind === "shell" ? "execute" : "other",
    status: "pending",
    ...approvalDetails(approval),
  };
}

/** The client's answer is untrusted: anything but the allow option denies. */
export function allowed(answer: RequestPermissionResponse | undefined): boolean {
  return answer?.outcome?.outcome === "selected" && answer.outcome.optionId === "allow";
}

/** What an approval would do, for the client's question: the command and where it runs, or the MCP call. */
function approvalDetails(approval: ApprovalRequestEvent): Pick<ToolCallUpdate, "rawInput" | "content"> {
  switch (approval.kind) {
    case "shell":
      return {
        rawInput: { command: approval.command, cwd: approval.cwd, sandbox: approval.sandbox },
        content: [
          textContent(`$ ${approval.command}\nin ${approval.cwd}, ${sandboxLabel(approval.sandbox)}`),
        ],
      };
    case "mcp":
      return {
        rawInput: { server: approval.server, tool: approval.tool, arguments: approval.arguments },
        content: [textContent(`${approval.server} · ${approval.tool}\n${approval.arguments}`)],
      };
    default: {
      const unknown: never = approval;
      return { rawInput: unknown, content: [] };
    }
  }
}
