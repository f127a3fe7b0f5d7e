import { execFileSync } from "node:child_process";
import { EventEmitter } from "node:events";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { AgentThread } from "../../agent/agent-thread.js";
import type { Engine } from "../../engine/engine.js";
import type { Script } from "../../engine/scripted/scripted-engine.js";
import { AgentRuntime } from "../../runtime/agent-runtime.js";
import { SessionThreadSource } from "../../runtime/session-thread-source.js";
import { ModelRegistry } from "../../server/model-registry.js";
import { SparkServer } from "../../server/spark-server.js";
import { AgentHost } from "../agent-host.js";
import type { HostSocket } from "../host-clients.js";

/**
 * The world the host explorer runs in: what `spark serve` runs (a Spark server, the agent host on
 * the session transcripts, the runtime reaching the model through the server), in a temporary git
 * workspace and sessions folder of its own, with every server-side socket and every model request
 * counted so invariants can be checked from outside.
 */

/** What the scripted model answers: the grammar of the explorer's inputs (see {@link exploreScript}). */
export const EXPLORE_FILE = /^f\d+\.txt$/;

/** Every model request's user messages, in the order the engine received them. */
export type RequestLog = string[][];

/** `engine`, with the user messages of every request it gets added to `log` (a steer is a new request). */
export function loggingEngine(engine: Engine, log: RequestLog): Engine {
  return {
    info: engine.info,
    generate(request, options) {
      log.push(request.messages.flatMap((m) => (m.role === "user" ? [m.content] : [])));
      return engine.generate(request, options);
    },
    draft: (request, options) => engine.draft(request, options),
    dispose: () => engine.dispose(),
    [Symbol.asyncDispose]: () => engine.dispose(),
  };
}

/**
 * The scripted model of the explorer. The last user message decides: `... say N` answers N words,
 * `... edit fK` adds the file `fK.txt` with apply_patch, `... run` asks for `true` in the shell;
 * a tool's output is answered `done`.
 */
export function exploreScript(): Script {
  return (request) => {
    const last = request.messages.at(-1);
    if (last?.role !== "user") return { text: "done" };
    const say = /\bsay (\d+)/.exec(last.content);
    if (say) return { text: Array.from({ length: Number(say[1]) }, (_, i) => `w${i}`).join(" ") };
    const edit = /\bedit (f\d+)/.exec(last.content);
    if (edit) {
      const patch = ["*** Begin Patch", `*** Add File: ${edit[1]}.txt`, `+${edit[1]}`, "*** End Patch"];
      return { toolCalls: [{ name: "apply_patch", arguments: JSON.stringify({ patch: patch.join("\n") }) }] };
    }
    if (/\brun\b/.test(last.content))
      return { toolCalls: [{ name: "shell", arguments: JSON.stringify({ command: "true" }) }] };
    return { text: `echo: ${last.content}` };
  };
}

/** A hosted thread as the explorer peeks at it (the host's own record, read-only). */
export interface PeekedThread {
  thread: AgentThread;
  seq: number;
  subscribers: Set<HostSocket>;
}

export class ExploreWorld {
  /** Emits `change` on every socket opened or closed server-side (clients emit their own). */
  readonly changes = new EventEmitter();
  /** Server-side sockets of the agent host that are open. */
  readonly sockets = new Set<HostSocket>();

  private constructor(
    readonly dir: string,
    readonly sessions: string,
    readonly server: SparkServer,
    readonly host: AgentHost,
    readonly runtime: AgentRuntime,
    readonly source: SessionThreadSource,
    private readonly models: ModelRegistry,
    private readonly ownsEngine: boolean,
  ) {
    this.changes.setMaxListeners(0);
  }

  /**
   * `engine` (see {@link loggingEngine}) under its own id; `ownsEngine`: dispose it with the world (a shared llama engine is
   * not). Each world has a new workspace and sessions folder.
   */
  static async start(engine: Engine, options: { ownsEngine: boolean }): Promise<ExploreWorld> {
    const dir = await mkdtemp(path.join(os.tmpdir(), "spark-explore-ws-"));
    const sessions = await mkdtemp(path.join(os.tmpdir(), "spark-explore-sessions-"));
    execFileSync("git", ["init", "-q"], { cwd: dir });
    const models = new ModelRegistry();
    models.add(engine.info.id, engine);
    let runtime: AgentRuntime | undefined;
    const source = new SessionThreadSource(() => runtime!, sessions);
    const host = new AgentHost(source);
    let world: ExploreWorld | undefined;
    const pending: HostSocket[] = [];
    const server = await SparkServer.start({
      models,
      sockets: {
        "/v1/agent": (socket) => {
          // The host's listeners first: a `change` on close comes after the host forgot the socket.
          host.accept(socket);
          if (world) world.accept(socket);
          else pending.push(socket);
        },
      },
    });
    runtime = await AgentRuntime.start({
      cwd: dir,
      server: `${server.url}/v1`,
      model: engine.info.id,
      sessionsDir: sessions,
      userDir: null,
      hooks: { hooks: [], notices: [] },
    });
    world = new ExploreWorld(dir, sessions, server, host, runtime, source, models, options.ownsEngine);
    for (const socket of pending) world.accept(socket);
    return world;
  }

  /** `ws://…/v1/agent`. */
  get agentUrl(): string {
    return `${this.server.url.replace("http", "ws")}/v1/agent`;
  }

  /** The host's threads as it holds them now (a test-only look at its private record). */
  threads(): Map<string, PeekedThread> {
    return (this.host as unknown as { threads: Map<string, PeekedThread> }).threads;
  }

  /** The threads the session source holds live (released or deleted ones must be gone). */
  liveSessions(): number {
    return (this.source as unknown as { live: Map<string, unknown> }).live.size;
  }

  /** The host's connected clients (a test-only look at HostClients' private set). */
  hostClients(): number {
    const clients = (this.host as unknown as { clients: { clients: Set<HostSocket> } }).clients;
    return clients.clients.size;
  }

  /** The explorer's files (`fK.txt`) in the workspace now, sorted. */
  async files(): Promise<string[]> {
    return (await readdir(this.dir)).filter((name) => EXPLORE_FILE.test(name)).sort();
  }

  async close(): Promise<void> {
    this.host.interruptAll();
    this.host.dispose();
    await this.source.flush().catch(() => {});
    await this.runtime.dispose();
    await this.server.close();
    if (this.ownsEngine) await this.models.dispose();
    await rm(this.dir, { recursive: true, force: true });
    await rm(this.sessions, { recursive: true, force: true });
  }

  private accept(socket: HostSocket): void {
    this.sockets.add(socket);
    this.changes.emit("change");
    socket.on("close", () => {
      this.sockets.delete(socket);
      this.changes.emit("change");
    });
  }
}
