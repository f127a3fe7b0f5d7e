import * as vscode from "vscode";
import { contextMeterText } from "../../src/client-core/context-meter.js";
import { meterText } from "../../src/client-core/turn-meter.js";
import type { ChatController } from "./chat-controller.js";
import type { SparkConnection } from "./spark-connection.js";

/** The status bar item: the connection, and while a turn runs, its live meter. Click: the chat. */
export class SparkStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
  private readonly disposables: vscode.Disposable[] = [];
  private timer: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly connection: SparkConnection,
    private readonly controller: ChatController,
  ) {
    this.item.command = "spark.openChat";
    this.item.name = "Spark";
    this.disposables.push(
      connection.onDidChangeState(() => this.update()),
      controller.onDidChangeView(() => this.update()),
    );
    this.update();
    this.item.show();
  }

  private update(): void {
    const state = this.connection.state;
    const view = this.controller.view;
    const running = view.turn !== null;
    void vscode.commands.executeCommand("setContext", "spark.turnRunning", running);
    if (running && !this.timer) this.timer = setInterval(() => this.update(), 250);
    if (!running && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
    const meter = [contextMeterText(view.context), meterText(view, Date.now())].filter(Boolean).join(" · ");
    switch (state.status) {
      case "connected":
        this.item.text = `${running ? "$(loading~spin)" : "$(zap)"} Spark${meter ? ` ${meter}` : ""}`;
        this.item.tooltip = `Spark at ${state.detail}${running ? " — streaming (Ctrl+Alt+Backspace stops)" : ""}`;
        break;
      case "failed":
        this.item.text = "$(warning) Spark";
        this.item.tooltip = state.detail;
        break;
      case "idle":
        this.item.text = "$(zap) Spark";
        this.item.tooltip = "Open the Spark chat";
        break;
      default:
        this.item.text = "$(sync~spin) Spark";
        this.item.tooltip = state.status;
    }
  }

  dispose(): void {
    if (this.timer) clearInterval(this.timer);
    for (const disposable of this.disposables) disposable.dispose();
    this.item.dispose();
  }
}
