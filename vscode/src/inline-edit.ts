import * as vscode from "vscode";
import type { ChatController } from "./chat-controller.js";
import { inlineEditPrompt } from "./core/inline-edit-prompt.js";

/**
 * Select code, describe a change, and Spark makes it with a minimal patch: the file is saved, the
 * request goes to the thread as a turn (queued behind a running one), and the resulting diff opens
 * for review hunk by hunk. The progress notification's Cancel interrupts the turn.
 */
export async function editSelection(controller: ChatController, instruction?: string): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    void vscode.window.showInformationMessage("Spark: open a file and select the code to change.");
    return;
  }
  const document = editor.document;
  const folder = vscode.workspace.getWorkspaceFolder(document.uri);
  if (!folder || document.uri.scheme !== "file") {
    void vscode.window.showInformationMessage("Spark edits files of the open workspace folder.");
    return;
  }
  const selection = editor.selection;
  const startLine = selection.start.line;
  // A selection ending at column 0 does not include that line.
  const endLine =
    selection.end.line > startLine && selection.end.character === 0
      ? selection.end.line - 1
      : selection.end.line;
  const asked =
    instruction ??
    (await vscode.window.showInputBox({
      title: "Spark: edit selection",
      prompt: `Describe the change to ${vscode.workspace.asRelativePath(document.uri, false)}:${startLine + 1}-${endLine + 1}`,
      placeHolder: "e.g. rename greet to welcome",
      ignoreFocusOut: true,
    }));
  if (!asked?.trim()) return;
  // The agent edits the file on disk: it must see what the editor shows.
  if (document.isDirty) await document.save();
  const range = new vscode.Range(startLine, 0, endLine, document.lineAt(endLine).text.length);
  const input = inlineEditPrompt({
    path: vscode.workspace.asRelativePath(document.uri, false),
    startLine: startLine + 1,
    endLine: endLine + 1,
    selection: document.getText(range),
    instruction: asked,
    languageId: document.languageId,
  });
  const done = controller.turnFor(input);
  await controller.send(input, "queue");
  await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: "Spark is editing", cancellable: true },
    async (_progress, token) => {
      token.onCancellationRequested(() => void controller.interrupt().catch(() => {}));
      const completed = await done;
      if (completed.status === "failed") {
        void vscode.window.showErrorMessage(
          `Spark: the edit failed: ${completed.error?.message ?? "unknown error"}`,
        );
      }
    },
  );
}
