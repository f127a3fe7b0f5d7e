import * as vscode from "vscode";
import { ApprovalPrompter } from "./approvals.js";
import { ChatController } from "./chat-controller.js";
import { ChatViewProvider } from "./chat-view-provider.js";
import { ReviewManager } from "./hunk-review.js";
import { editSelection } from "./inline-edit.js";
import { SparkConnection } from "./spark-connection.js";
import { SparkStatusBar } from "./status-bar.js";
import type { FromWebview } from "./webview/messages.js";

let connection: SparkConnection | null = null;

/** Settings that change how Spark is reached: changing one reconnects. */
const CONNECTION_SETTINGS = [
  "spark.serverUrl",
  "spark.apiKey",
  "spark.sparkPath",
  "spark.autoStart",
  "spark.serveArgs",
];

export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel("Spark", { log: true });
  connection = new SparkConnection(log);
  const controller = new ChatController(connection, context.workspaceState);
  const reviews = new ReviewManager(controller, log);
  const spark = connection;

  /** Runs a command's work; a failure is logged and shown once, never thrown at VS Code. */
  const run =
    <A extends unknown[]>(work: (...args: A) => Promise<unknown>) =>
    async (...args: A) => {
      try {
        await work(...args);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        log.error(message);
        const choice = await vscode.window.showErrorMessage(`Spark: ${message}`, "Show Log", "Settings");
        if (choice === "Show Log") log.show();
        if (choice === "Settings")
          void vscode.commands.executeCommand("workbench.action.openSettings", "spark.");
      }
    };

  const onMessage = (message: FromWebview) => {
    switch (message.type) {
      case "ready":
        // Opening the chat connects (starting a server if need be) and shows the thread.
        void run(() => controller.ensureThread())();
        return;
      case "send":
        void run(() => controller.send(message.text, message.mode, message.plan))();
        return;
      case "typing":
        controller.typing(message.text);
        return;
      case "interrupt":
        void run(() => controller.interrupt())();
        return;
      case "approval":
        void run(() => controller.respondToApproval(message.approvalId, message.approved))();
        return;
      case "patch":
        void run(() => reviews.resolveFromChat(message.itemId, message.path, message.action))();
        return;
      case "fork":
        void run(() => controller.fork(message.itemId))();
        return;
      case "rewind":
        void run(async () => {
          const text = await controller.rewind(message.itemId, message.restore);
          if (text !== null && message.restore !== "code") chat.refill(text);
        })();
        return;
      case "command":
        void vscode.commands.executeCommand(message.command);
        return;
      case "files":
        // No list (no thread yet, disconnected): no picker.
        controller.workspaceFiles(message.query).then(
          (files) => chat.files(message.id, files),
          () => chat.files(message.id, []),
        );
        return;
      default: {
        const unreachable: never = message;
        return unreachable;
      }
    }
  };
  const chat = new ChatViewProvider(context.extensionUri, controller, connection, onMessage);

  context.subscriptions.push(
    log,
    connection,
    controller,
    reviews,
    chat,
    new ApprovalPrompter(controller),
    new SparkStatusBar(connection, controller),
    vscode.window.registerWebviewViewProvider(ChatViewProvider.viewId, chat, {
      webviewOptions: { retainContextWhenHidden: true },
    }),
    vscode.commands.registerCommand(
      "spark.openChat",
      run(async () => {
        await chat.reveal();
        await controller.ensureThread();
      }),
    ),
    vscode.commands.registerCommand(
      "spark.send",
      run(async () => {
        const editor = vscode.window.activeTextEditor;
        const selected = editor && !editor.selection.isEmpty ? editor.document.getText(editor.selection) : "";
        const where = editor ? vscode.workspace.asRelativePath(editor.document.uri, false) : "";
        const quote = selected
          ? `In ${where}:${editor!.selection.start.line + 1}-${editor!.selection.end.line + 1}:\n\`\`\`${editor!.document.languageId}\n${selected}\n\`\`\`\n`
          : "";
        await chat.reveal(quote);
        await controller.ensureThread();
      }),
    ),
    vscode.commands.registerCommand(
      "spark.stop",
      run(() => controller.interrupt()),
    ),
    vscode.commands.registerCommand(
      "spark.editSelection",
      run((instruction?: unknown) =>
        editSelection(controller, typeof instruction === "string" ? instruction : undefined),
      ),
    ),
    vscode.commands.registerCommand(
      "spark.acceptHunk",
      run((target?: unknown) => reviews.acceptHunk(isTarget(target) ? target : {})),
    ),
    vscode.commands.registerCommand(
      "spark.rejectHunk",
      run((target?: unknown) => reviews.rejectHunk(isTarget(target) ? target : {})),
    ),
    vscode.commands.registerCommand(
      "spark.acceptFile",
      run((uri?: unknown) => reviews.acceptFileAt(uri instanceof vscode.Uri ? uri : undefined)),
    ),
    vscode.commands.registerCommand(
      "spark.rejectFile",
      run((uri?: unknown) => reviews.rejectFileAt(uri instanceof vscode.Uri ? uri : undefined)),
    ),
    vscode.commands.registerCommand(
      "spark.openDiff",
      run((uri: vscode.Uri, itemId: string) => reviews.openDiff(uri, itemId)),
    ),
    vscode.commands.registerCommand(
      "spark.undo",
      run(() => controller.undo()),
    ),
    vscode.commands.registerCommand(
      "spark.newThread",
      run(() => controller.newThread()),
    ),
    vscode.commands.registerCommand(
      "spark.resumeThread",
      run(() => controller.pickThread()),
    ),
    vscode.commands.registerCommand(
      "spark.reconnect",
      run(async () => {
        await spark.restart();
        await controller.ensureThread();
      }),
    ),
    vscode.commands.registerCommand("spark.showLog", () => log.show()),
    // A workspace's own connection settings apply once it is trusted.
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      if (!spark.settingsChanged()) return;
      log.info("The workspace is trusted now: its connection settings apply; reconnecting");
      void run(() => spark.restart())();
    }),
    vscode.workspace.onDidChangeConfiguration((change) => {
      if (CONNECTION_SETTINGS.some((setting) => change.affectsConfiguration(setting))) {
        log.info("Connection settings changed; reconnecting");
        void run(() => spark.restart())();
      }
    }),
  );
  void vscode.commands.executeCommand("setContext", "spark.turnRunning", false);
  void vscode.commands.executeCommand("setContext", "spark.hasPendingChanges", false);
}

/** Stops a server the extension started, and waits for it. */
export async function deactivate(): Promise<void> {
  await connection?.shutdown();
  connection = null;
}

function isTarget(value: unknown): value is { uri?: vscode.Uri; itemId?: string; index?: number } {
  return typeof value === "object" && value !== null && "itemId" in value;
}
