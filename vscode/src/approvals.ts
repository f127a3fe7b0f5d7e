import * as vscode from "vscode";
import { type ApprovalRequestEvent, sandboxLabel } from "../../src/protocol/agent.js";
import type { ChatController } from "./chat-controller.js";

/**
 * Asks in the editor's own UI before the agent runs a command: a notification with Approve and
 * Deny (or a modal dialog, per `spark.approvals`). The chat view shows the same buttons; the first
 * answer wins, and the host ignores a second one.
 */
export class ApprovalPrompter implements vscode.Disposable {
  private readonly asked = new Set<string>();
  private readonly subscription: vscode.Disposable;

  constructor(private readonly controller: ChatController) {
    this.subscription = controller.onDidChangeView((view) => {
      for (const approval of view.approvals) {
        if (this.asked.has(approval.approval_id)) continue;
        this.asked.add(approval.approval_id);
        void this.ask(approval.approval_id, question(approval));
      }
    });
  }

  private async ask(approvalId: string, asked: Question): Promise<void> {
    const modal =
      vscode.workspace.getConfiguration("spark").get<string>("approvals", "notification") === "modal";
    const choice = await vscode.window.showWarningMessage(
      modal ? asked.title : asked.line,
      { modal, detail: asked.detail },
      "Approve",
      "Deny",
    );
    // Dismissed (Escape, or the notification closed): the request stays open in the chat view.
    if (choice === undefined) return;
    const stillPending = this.controller.view.approvals.some(
      (approval) => approval.approval_id === approvalId,
    );
    if (stillPending)
      await this.controller.respondToApproval(approvalId, choice === "Approve").catch(() => {});
  }

  dispose(): void {
    this.subscription.dispose();
  }
}

interface Question {
  /** The modal dialog's title. */
  title: string;
  /** The notification's one line. */
  line: string;
  detail: string;
}

/** What the editor asks: a command with its directory and sandbox, or an MCP server's tool call. */
function question(approval: ApprovalRequestEvent): Question {
  if (approval.kind === "mcp") {
    const call = `${approval.server} · ${approval.tool}`;
    return {
      title: "Spark wants to call an MCP tool",
      line: `Spark wants to call ${call}`,
      detail: `${call}\n\n${approval.arguments}`,
    };
  }
  const sandbox = sandboxLabel(approval.sandbox);
  return {
    title: "Spark wants to run a command",
    line: `Spark wants to run: ${approval.command} (${sandbox})`,
    detail: `${approval.command}\n\nin ${approval.cwd}\n${sandbox}`,
  };
}
