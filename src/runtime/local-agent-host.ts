import { sessionsDir } from "../agent/transcript.js";
import { HostClient } from "../client-core/host-client.js";
import { AgentHost } from "../host/agent-host.js";
import { AgentRuntime, type AgentRuntimeOptions } from "./agent-runtime.js";
import { socketPair } from "./in-memory-socket.js";
import { SessionThreadSource } from "./session-thread-source.js";

/**
 * The agent host of a `spark` that runs its own agent (no `spark serve` to attach to): the same
 * AgentHost as the server's, over its runtime, reached in memory through the client core's
 * HostClient. So the terminal has one code path whether its threads run here or on a server.
 */
export class LocalAgentHost implements AsyncDisposable {
  private closing: Promise<void> | null = null;

  private constructor(
    readonly runtime: AgentRuntime,
    private readonly source: SessionThreadSource,
    private readonly host: AgentHost,
  ) {}

  /** Starts the runtime (the model loads, unless it is a remote server) and the host over it. */
  static async start(options: AgentRuntimeOptions): Promise<LocalAgentHost> {
    const runtime = await AgentRuntime.start(options);
    const source = new SessionThreadSource(() => runtime, options.sessionsDir ?? sessionsDir());
    return new LocalAgentHost(
      runtime,
      source,
      new AgentHost(source, { mcp: runtime.mcp, catalog: runtime.catalog, models: runtime.models }),
    );
  }

  /** A connected client of this host. */
  async connect(): Promise<HostClient> {
    const client = new HostClient({
      url: "memory://spark/v1/agent",
      createSocket: () => {
        const { host, client: end } = socketPair();
        this.host.accept(host);
        return end;
      },
    });
    await client.connect();
    return client;
  }

  /** Stops every turn, saves every transcript and closes the runtime. Idempotent. */
  dispose(): Promise<void> {
    this.closing ??= (async () => {
      this.host.interruptAll();
      this.host.dispose();
      this.source.cancelSubAgents();
      await this.source.flush();
      await this.runtime.dispose();
    })();
    return this.closing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }
}
