import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import { HostClient } from "../../src/client-core/host-client.js";
import { nodeSocketFactory } from "../../src/client-core/node-socket.js";
import type { StampedEvent } from "../../src/client-core/thread-view.js";
import type { McpServerInfo } from "../../src/protocol/agent.js";
import type { DecodedCatalog } from "../../src/protocol/catalog.js";
import {
  type ConnectionSettings,
  describeIgnoredSettings,
  readConnectionSettings,
} from "./core/connection-settings.js";
import {
  agentSocketUrl,
  isLoopback,
  launchSpark,
  localServerKey,
  normalizeServerUrl,
  probeServer,
  resolveSparkCommand,
  SparkLaunchError,
  type SparkProcess,
} from "./core/spark-launcher.js";
import type { ConnectionState } from "./webview/messages.js";

type Settings = ConnectionSettings;

/**
 * The connection settings that may apply here: a workspace's value of one that starts a program or
 * redirects prompts only in a trusted workspace, and never for a machine-scoped one.
 */
function readSettings(): { settings: Settings; ignored: string[] } {
  const config = vscode.workspace.getConfiguration("spark");
  const read = readConnectionSettings((key) => config.inspect<ConnectionSettings[typeof key]>(key), {
    trusted: vscode.workspace.isTrusted,
  });
  return {
    settings: { ...read.settings, serverUrl: normalizeServerUrl(read.settings.serverUrl) },
    ignored: read.ignored,
  };
}

/**
 * The extension's link to Spark: it connects to the configured `spark serve`, or starts one for
 * the workspace, and keeps one agent-host client whose events it passes on. Everything it does is
 * written to the "Spark" output channel.
 */
export class SparkConnection implements vscode.Disposable {
  private client: HostClient | null = null;
  private server: SparkProcess | null = null;
  /** The key of the server started here. */
  private serverKey = "";
  /** The key the client was last pointed at the server with. */
  private clientKey = "";
  private connecting: Promise<HostClient> | null = null;
  private current: ConnectionState = { status: "idle", detail: "" };
  private readonly stateEmitter = new vscode.EventEmitter<ConnectionState>();
  private readonly eventEmitter = new vscode.EventEmitter<StampedEvent>();
  private readonly resetEmitter = new vscode.EventEmitter<string>();
  private readonly errorEmitter = new vscode.EventEmitter<string>();
  private readonly mcpEmitter = new vscode.EventEmitter<readonly McpServerInfo[]>();
  private readonly catalogEmitter = new vscode.EventEmitter<DecodedCatalog>();
  private disposed = false;
  /** The settings of the last connection, as JSON. */
  private lastSettings: string | null = null;
  /** The server started here exited: the client's reconnecting to it is in vain. */
  private serverExited = false;

  /** The connection's state, for the chat view and the status bar. */
  readonly onDidChangeState = this.stateEmitter.event;
  /** Thread events, each once, in order. */
  readonly onEvent = this.eventEmitter.event;
  /** A thread is replayed from its start (its server restarted). */
  readonly onReset = this.resetEmitter.event;
  /** An error event of the host. */
  readonly onHostError = this.errorEmitter.event;
  /** The host listed its MCP servers anew. */
  readonly onDidChangeMcpServers = this.mcpEmitter.event;
  /** The host listed its skills and defined agents. */
  readonly onDidChangeCatalog = this.catalogEmitter.event;

  constructor(private readonly log: vscode.LogOutputChannel) {}

  get state(): ConnectionState {
    return this.current;
  }

  /** The host's MCP servers as it last listed them (empty before it did). */
  get mcpServers(): readonly McpServerInfo[] {
    return this.client?.mcpServers ?? [];
  }

  /** The host's skills and defined agents as it last listed them (none before it did). */
  get catalog(): DecodedCatalog {
    return this.client?.catalog ?? { skills: [], agents: [] };
  }

  /**
   * The connected client, connecting (and starting a server) first when needed. While the client
   * reconnects by itself it is returned as it is, unless the server it reconnects to was started
   * here and has exited: then a new one is started.
   */
  ensureConnected(): Promise<HostClient> {
    const client = this.client;
    if (client?.status === "open") return Promise.resolve(client);
    if (client?.status === "reconnecting" && !this.serverExited) return Promise.resolve(client);
    this.connecting ??= this.connect(false).finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  /**
   * Stops a server this extension started, then connects again (starting a new one if need be);
   * the thread shown is replayed from its start.
   */
  async restart(): Promise<HostClient> {
    await this.connecting?.catch(() => {});
    await this.stopServer();
    this.connecting = this.connect(true).finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  /** Whether the settings that apply now differ from those of the last connection (trust granted, say). */
  settingsChanged(): boolean {
    return this.lastSettings !== null && JSON.stringify(readSettings().settings) !== this.lastSettings;
  }

  private async connect(fresh: boolean): Promise<HostClient> {
    const { settings, ignored } = readSettings();
    this.lastSettings = JSON.stringify(settings);
    const notice = describeIgnoredSettings(ignored, vscode.workspace.isTrusted);
    if (notice) this.log.warn(notice);
    try {
      const { baseUrl, apiKey } = await this.serverAddress(settings);
      const url = agentSocketUrl(baseUrl);
      this.setState("connecting", url);
      const client = this.client ?? this.newClient(url, apiKey);
      // Another server (or the same one asked again, or restarted with a new key): sequence
      // numbers start over.
      if (fresh || client.endpoint !== url || this.clientKey !== apiKey)
        await client.retarget(url, { fresh: true, apiKey });
      else await client.connect();
      this.clientKey = apiKey;
      this.setState("connected", baseUrl);
      return client;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.log.error(message);
      this.setState("failed", message);
      throw error;
    }
  }

  private newClient(url: string, apiKey: string): HostClient {
    this.clientKey = apiKey;
    const client = new HostClient({
      url,
      ...(apiKey ? { apiKey } : {}),
      createSocket: nodeSocketFactory,
    });
    client.on("log", (line) => this.log.info(line));
    client.on("event", (event) => this.eventEmitter.fire(event));
    client.on("reset", (threadId) => this.resetEmitter.fire(threadId));
    client.on("error", (error) => this.errorEmitter.fire(error.message));
    client.on("mcp", (servers) => this.mcpEmitter.fire(servers));
    client.on("catalog", (catalog) => this.catalogEmitter.fire(catalog));
    client.on("status", (status) => {
      if (status === "reconnecting") this.setState("reconnecting", url);
      else if (status === "open")
        this.setState("connected", url.replace(/^ws/, "http").replace(/\/v1\/agent$/, ""));
    });
    this.client = client;
    return client;
  }

  /**
   * The server to use and its key: the configured one if it answers (with spark.apiKey, else the
   * key a local `spark serve` of this user recorded), else one started here.
   */
  private async serverAddress(settings: Settings): Promise<{ baseUrl: string; apiKey: string }> {
    if (this.server) return { baseUrl: this.server.baseUrl, apiKey: this.serverKey };
    if (settings.serverUrl) {
      this.setState("connecting", settings.serverUrl);
      const recorded = settings.apiKey ? null : await localServerKey(settings.serverUrl);
      if (recorded) this.log.info(`Using the key ${settings.serverUrl} recorded for local clients`);
      const apiKey = settings.apiKey || recorded || "";
      const probe = await probeServer(settings.serverUrl, apiKey ? { apiKey } : {});
      if (probe.ok) {
        this.log.info(`Spark at ${settings.serverUrl} serves ${probe.models.join(", ") || "no model"}`);
        return { baseUrl: settings.serverUrl, apiKey };
      }
      if (probe.error.code === "unauthorized") throw probe.error;
      if (!settings.autoStart || !isLoopback(settings.serverUrl)) {
        throw new SparkLaunchError(
          "unreachable",
          `${probe.error.message} Start it with \`spark serve\`${settings.autoStart ? "" : ", turn on spark.autoStart"}, or clear spark.serverUrl so Spark starts one.`,
        );
      }
      this.log.info(probe.error.message);
      return this.startServer(settings, Number(new URL(settings.serverUrl).port || 80));
    }
    if (!settings.autoStart) {
      throw new SparkLaunchError(
        "unreachable",
        "No Spark server: set spark.serverUrl, or turn on spark.autoStart.",
      );
    }
    return this.startServer(settings, 0);
  }

  private async startServer(settings: Settings, port: number): Promise<{ baseUrl: string; apiKey: string }> {
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (folder?.uri.scheme !== "file") {
      throw new SparkLaunchError(
        "not_found",
        "Open a folder first: Spark works in a workspace folder (or set spark.serverUrl).",
      );
    }
    const cwd = folder.uri.fsPath;
    const command = resolveSparkCommand({
      sparkPath: settings.sparkPath,
      cwd,
      trustedWorkspace: vscode.workspace.isTrusted,
    });
    this.log.info(`Starting ${[command.command, ...command.args].join(" ")} serve in ${cwd}`);
    this.setState("starting", cwd);
    // A server started here requires a key only this extension knows (unless spark.apiKey says).
    const apiKey = settings.apiKey || randomBytes(32).toString("base64url");
    const server = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "Starting Spark", cancellable: true },
      (progress, token) => {
        const controller = new AbortController();
        token.onCancellationRequested(() => controller.abort());
        return launchSpark({
          command,
          cwd,
          port,
          apiKey,
          extraArgs: settings.serveArgs,
          signal: controller.signal,
          onOutput: (line) => {
            if (!line.trim()) return;
            this.log.info(`[serve] ${line}`);
            progress.report({ message: line.trim().slice(0, 80) });
          },
        });
      },
    );
    this.server = server;
    this.serverKey = apiKey;
    this.serverExited = false;
    this.log.info(`spark serve (pid ${server.pid}) listens at ${server.baseUrl}`);
    void server.exited.then((code) => {
      if (this.server !== server) return;
      this.server = null;
      this.serverExited = true;
      if (this.disposed) return;
      const message = `spark serve exited (code ${code ?? "signal"}).`;
      this.log.warn(message);
      this.setState("failed", message);
      void vscode.window.showWarningMessage(`Spark: ${message}`, "Restart", "Show Log").then((choice) => {
        if (choice === "Restart") void this.restart().catch(() => {});
        if (choice === "Show Log") this.log.show();
      });
    });
    return { baseUrl: server.baseUrl, apiKey };
  }

  private async stopServer(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server) {
      this.log.info(`Stopping spark serve (pid ${server.pid})`);
      await server.dispose();
    }
  }

  private setState(status: ConnectionState["status"], detail: string): void {
    this.current = { status, detail };
    this.stateEmitter.fire(this.current);
  }

  dispose(): void {
    this.disposed = true;
    this.client?.dispose();
    void this.stopServer();
    this.stateEmitter.dispose();
    this.eventEmitter.dispose();
    this.resetEmitter.dispose();
    this.errorEmitter.dispose();
    this.mcpEmitter.dispose();
    this.catalogEmitter.dispose();
  }

  /** Stops a server this extension started, and waits for it (deactivation). */
  async shutdown(): Promise<void> {
    this.disposed = true;
    this.client?.dispose();
    await this.stopServer();
  }
}
