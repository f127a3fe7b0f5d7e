import { realpath, stat } from "node:fs/promises";
import path from "node:path";
import { RequestError } from "@agentclientprotocol/sdk";
import type { HostClient } from "../../client-core/host-client.js";
import type { LocalAgentHost } from "../../runtime/local-agent-host.js";
import type { AgentFlags } from "../agent-flags.js";
import { attachTarget, connectHost } from "../host-target.js";
import { startLocalHost } from "../local-host-start.js";

/** Workspaces one `spark acp` serves at once: each may load a model of its own. */
export const MAX_WORKSPACES = 4;

/** The agent host of one workspace, as the ACP sessions in it reach it. */
export interface AcpWorkspace {
  /** The workspace root (a real path). */
  root: string;
  client: HostClient;
}

/**
 * The agent hosts of the workspaces an editor opened sessions in, started on first use: the
 * user's running `spark serve` for that workspace when there is one (as `spark exec` attaches,
 * unless the flags ask for an agent of this process), else an agent of this process.
 */
export class AcpWorkspaces implements AsyncDisposable {
  private readonly open = new Map<string, Promise<AcpWorkspace>>();
  private readonly locals: LocalAgentHost[] = [];
  private closed = false;

  constructor(
    private readonly flags: AgentFlags,
    private readonly log: (line: string) => void,
  ) {}

  /** The host of the workspace at `cwd` (an absolute path to a folder, as ACP requires). */
  async get(cwd: string): Promise<AcpWorkspace> {
    if (!path.isAbsolute(cwd))
      throw RequestError.invalidParams({ cwd }, `cwd must be an absolute path: ${cwd}`);
    const root = await realpath(cwd).catch(() => null);
    if (root === null || !(await stat(root)).isDirectory())
      throw RequestError.invalidParams({ cwd }, `cwd is not a folder: ${cwd}`);
    let workspace = this.open.get(root);
    if (!workspace) {
      if (this.open.size >= MAX_WORKSPACES)
        throw RequestError.invalidRequest(
          { cwd },
          `This spark acp serves ${MAX_WORKSPACES} workspaces already; start another for ${root}.`,
        );
      workspace = this.start(root);
      this.open.set(root, workspace);
      // A failed start is tried again by the next session.
      workspace.catch(() => this.open.delete(root));
    }
    return workspace;
  }

  private async start(root: string): Promise<AcpWorkspace> {
    if (this.closed) throw RequestError.internalError(undefined, "spark acp is shutting down.");
    const flags: AgentFlags = { ...this.flags, cd: root };
    const target = await attachTarget(flags);
    if (target) {
      const client = await connectHost(target);
      this.log(`Sessions in ${root} run on spark serve at ${target.url}.`);
      return { root, client };
    }
    const local = await startLocalHost(flags, { mode: "exec" });
    if (this.closed) {
      await local.dispose();
      throw RequestError.internalError(undefined, "spark acp is shutting down.");
    }
    this.locals.push(local);
    this.log(`Sessions in ${root} run in this process on ${local.runtime.modelId}.`);
    return { root, client: await local.connect() };
  }

  /** Closes every connection and stops this process's agents (their turns end). Idempotent. */
  async dispose(): Promise<void> {
    this.closed = true;
    const started = await Promise.allSettled(this.open.values());
    this.open.clear();
    for (const result of started) if (result.status === "fulfilled") result.value.client.dispose();
    await Promise.all(this.locals.splice(0).map((local) => local.dispose()));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }
}
