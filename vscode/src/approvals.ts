import * as vscode from "vscode";
import { sandboxLabel } from "../../src/protocol/agent.js";
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
        void this.ask(approval.approval_id, approval.command, approval.cwd, sandboxLabel(approval.sandbox));
      }
    });
  }

  private async ask(approvalId: string, command: string, cwd: string, sandbox: string): Promise<void> {
    const modal =
      vscode.workspace.getConfiguration("spark").get<string>("approvals", "notification") === "modal";
    const choice = await vscode.window.showWarningMessage(
      modal ? "Spark wants to run a command" : `Spark wants to run: ${command} (${sandbox})`,
      { modal, detail: `${command}\n\nin ${cwd}\n${sandbox}` },
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
