import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import {
  type ClientConnection,
  client,
  ndJsonStream,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionNotification,
} from "@agentclientprotocol/sdk";
import { sparkBin } from "../../test-support/spark-binary.js";

/**
 * A test's editor: the real `spark acp` binary driven by the SDK's client side. It records every
 * `session/update` and answers permission requests with `answer` (set per test).
 */
export class AcpTestClient implements AsyncDisposable {
  readonly updates: SessionNotification[] = [];
  readonly permissions: RequestPermissionRequest[] = [];
  /** How the next permission request is answered. Default: reject. */
  answer: (
    request: RequestPermissionRequest,
  ) => Promise<RequestPermissionResponse> | RequestPermissionResponse = () => ({
    outcome: { outcome: "selected", optionId: "reject" },
  });
  /** Called when the agent withdraws a permission request. */
  onCancelled: () => void = () => {};
  stderr = "";
  private waiters: { test: () => boolean; resolve: () => void }[] = [];
  readonly connection: ClientConnection;
  private readonly exited: Promise<void>;

  constructor(readonly child: ChildProcessWithoutNullStreams) {
    child.stderr.on("data", (chunk) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve) => child.once("exit", () => resolve()));
    this.connection = client({ name: "spark-acp-test" })
      .onNotification("session/update", ({ params }) => {
        this.updates.push(params);
        this.check();
      })
      .onRequest("session/request_permission", async ({ params, signal }) => {
        this.permissions.push(params);
        this.check();
        // The agent withdrew the question ($/cancel_request): ACP's answer is `cancelled`.
        const withdrawn = new Promise<RequestPermissionResponse>((resolve) => {
          signal.addEventListener("abort", () => {
            this.onCancelled();
            resolve({ outcome: { outcome: "cancelled" } });
          });
        });
        return Promise.race([this.answer(params), withdrawn]);
      })
      .connect(
        ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>),
      );
  }

  /** Starts `spark acp` in `cwd` with `env` over this process's environment. */
  static start(cwd: string, env: NodeJS.ProcessEnv, args: string[] = []): AcpTestClient {
    const child = spawn(process.execPath, [sparkBin, "acp", ...args], {
      cwd,
      env: { ...process.env, ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    return new AcpTestClient(child);
  }

  get agent() {
    return this.connection.agent;
  }

  /** The updates of `sessionId` so far, of one kind. */
  of<K extends SessionNotification["update"]["sessionUpdate"]>(
    sessionId: string,
    kind: K,
  ): Extract<SessionNotification["update"], { sessionUpdate: K }>[] {
    return this.updates
      .filter((n) => n.sessionId === sessionId && n.update.sessionUpdate === kind)
      .map((n) => n.update as Extract<SessionNotification["update"], { sessionUpdate: K }>);
  }

  /** The agent's message text of `sessionId` so far. */
  text(sessionId: string): string {
    return this.of(sessionId, "agent_message_chunk")
      .map((u) => (u.content.type === "text" ? u.content.text : ""))
      .join("");
  }

  /** Resolves once `test` holds (checked on every update and permission request). */
  until(test: () => boolean): Promise<void> {
    if (test()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ test, resolve }));
  }

  async initialize(): Promise<void> {
    await this.agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  }

  async newSession(cwd: string): Promise<string> {
    const { sessionId } = await this.agent.request("session/new", { cwd, mcpServers: [] });
    return sessionId;
  }

  private check(): void {
    for (const waiter of [...this.waiters]) {
      if (waiter.test()) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  }

  /** Closes stdin (as an editor quitting does) and waits for the process to exit. */
  async close(): Promise<void> {
    this.connection.close();
    this.child.stdin.end();
    await this.exited;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
