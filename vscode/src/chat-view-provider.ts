import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import type { ThreadView, ViewAction } from "../../src/client-core/thread-view.js";
import type { ChatController, ViewSink } from "./chat-controller.js";
import type { SparkConnection } from "./spark-connection.js";
import type { FromWebview, ToWebview } from "./webview/messages.js";

/** Actions are posted at most this often: one message per frame, not one per token. */
const FLUSH_MS = 16;

/**
 * The chat in the side bar: a webview that renders the controller's view. It is sent the whole
 * view when it loads, then each action as it comes (batched per frame), and folds them with the
 * same reducer the extension uses; what it sends back are the person's requests.
 */
export class ChatViewProvider implements vscode.WebviewViewProvider, ViewSink, vscode.Disposable {
  static readonly viewId = "spark.chat";
  private view: vscode.WebviewView | null = null;
  private ready = false;
  private pending: { action: ViewAction; at: number }[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly controller: ChatController,
    private readonly connection: SparkConnection,
    private readonly onMessage: (message: FromWebview) => void,
  ) {
    this.disposables.push(
      connection.onDidChangeState((state) => this.post({ type: "connection", connection: state })),
      connection.onDidChangeMcpServers((servers) => this.post({ type: "mcp", servers })),
      connection.onDidChangeCatalog((catalog) => this.post({ type: "catalog", catalog })),
    );
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const webview = view.webview;
    webview.options = {
      enableScripts: true,
      localResourceRoots: [
        vscode.Uri.joinPath(this.extensionUri, "dist"),
        vscode.Uri.joinPath(this.extensionUri, "media"),
      ],
    };
    webview.html = this.html(webview);
    this.disposables.push(
      webview.onDidReceiveMessage((message: FromWebview) => {
        if (message.type === "ready") {
          this.ready = true;
          this.snapshot(this.controller.view);
          this.post({ type: "mcp", servers: this.connection.mcpServers });
          this.post({ type: "catalog", catalog: this.connection.catalog });
        }
        this.onMessage(message);
      }),
      view.onDidDispose(() => {
        this.view = null;
        this.ready = false;
      }),
      this.controller.addSink(this),
    );
  }

  /** Shows the chat and puts the cursor in its input (with `text` when given). */
  async reveal(text?: string): Promise<void> {
    await vscode.commands.executeCommand(`${ChatViewProvider.viewId}.focus`);
    this.post({ type: "focus", ...(text ? { text } : {}) });
  }

  /** Answers the chat's `@` query `id` with the files that match. */
  files(id: number, files: string[]): void {
    this.post({ type: "files", id, files });
  }

  /** Puts a rewound message back into the input. */
  refill(text: string): void {
    this.post({ type: "refill", text });
  }

  snapshot(view: ThreadView): void {
    this.pending = [];
    this.post({ type: "snapshot", view, connection: this.connection.state });
  }

  actions(actions: { action: ViewAction; at: number }[]): void {
    if (!this.ready) return;
    this.pending.push(...actions);
    this.timer ??= setTimeout(() => {
      this.timer = null;
      const batch = this.pending;
      this.pending = [];
      if (batch.length > 0) this.post({ type: "actions", actions: batch });
    }, FLUSH_MS);
  }

  private post(message: ToWebview): void {
    if (this.view && this.ready) void this.view.webview.postMessage(message);
  }

  private html(webview: vscode.Webview): string {
    const nonce = randomBytes(16).toString("base64");
    const script = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "dist", "webview.js"));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "media", "chat.css"));
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource}`,
      `script-src 'nonce-${nonce}'`,
      `font-src ${webview.cspSource}`,
    ].join("; ");
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style}">
<title>Spark</title>
</head>
<body>
<div id="spark-chat-root"></div>
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    for (const disposable of this.disposables) disposable.dispose();
  }
}
