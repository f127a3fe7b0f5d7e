import { randomBytes } from "node:crypto";
import path from "node:path";
import { AgentThread } from "../agent/agent-thread.js";
import type { AgentThreadOptions } from "../agent/agent-thread-options.js";
import { discoverAgentsFiles, findRepoRoot } from "../agent/agents-md.js";
import type { ApprovalPolicy } from "../agent/approval.js";
import { Checkpoints } from "../agent/checkpoints.js";
import { type Catalog, loadCatalog } from "../agent/definitions/catalog.js";
import { EditDiagnostics } from "../agent/diagnostics/edit-diagnostics.js";
import type { HookSet } from "../agent/hooks/thread-hooks.js";
import { McpHub } from "../agent/mcp/mcp-hub.js";
import { CommandSandbox } from "../agent/sandbox/command-sandbox.js";
import { buildSystemPrompt } from "../agent/system-prompt.js";
import { checkpointsFile, readSession, sessionsDir, Transcript } from "../agent/transcript.js";
import { Workspace } from "../agent/workspace.js";
import { ResponsesClient, type ResponsesClientOptions } from "../client/responses-client.js";
import { isProjectTrusted } from "../config/project-trust.js";
import type { Limits, ResolvedConfig } from "../config/spark-config.js";
import { tierAdmission, userConfigPath } from "../config/spark-config.js";
import { describeBackend, unusedGpuNotice } from "../engine/llama/backend-info.js";
import { probeGpu } from "../engine/llama/gpu-probe.js";
import { LlamaEngine } from "../engine/llama/llama-engine.js";
import type { SandboxMode } from "../protocol/agent.js";
import type { ThreadMcpServer } from "../protocol/agent-requests.js";
import type { WorktreeRef } from "../protocol/worktree-name.js";
import type { ModelRegistry } from "../server/model-registry.js";
import { SparkServer } from "../server/spark-server.js";
import { engineBuildNotice } from "./engine-build-notice.js";
import { engineReplacement } from "./engine-replacement.js";
import { loadHooks } from "./hook-files.js";
import { PromptWarmup } from "./prompt-warmup.js";
import { SessionRecorder } from "./session-recorder.js";
import { startThreadMcpServers } from "./thread-mcp-servers.js";
import { chooseTiers, replacedTierLoader, type TierLoader, tierRegistry } from "./tier-engines.js";
import { openWorkspaceScope, type WorkspaceScope } from "./workspace-scope.js";

export interface AgentRuntimeOptions {
  /** The workspace root. */
  cwd: string;
  /**
   * `--model`: a tier of {@link config}, else a GGUF path or hf: URI for the embedded default
   * tier, or the model id for `--server`.
   */
  model?: string;
  /** `--server`: a Responses-compatible endpoint (`http://host:port/v1`) instead of the embedded engine. */
  server?: string;
  /** With `server`: the models it serves that threads may switch to (`spark serve`'s tiers). Default: none. */
  serverModels?: string[];
  apiKey?: string;
  /** Embedded engine: tokens of context. Default: the model's, at least 4096 and at most 32768. */
  contextSize?: number;
  /**
   * Makes each embedded tier's engine (tests pass scripted ones: see test-support/scripted-tiers.ts).
   * Default: as the tier's config says, or, for the default tier, as an embedding entry point's
   * engine replacement says (engine-replacement.ts).
   */
  loadTier?: TierLoader;
  /**
   * The user's (and a trusted project's) config: its MCP servers, sandbox and limits, and, for the
   * embedded engine, its tiers (each served as a model named after it). A `--server` has models of
   * its own: the tiers are not used there (`model` names one). Default: one embedded `fast` tier,
   * no delegate tier, no MCP servers.
   */
  config?: ResolvedConfig;
  /** Whether commands and untrusted MCP calls wait for the person's yes. Default: "ask". */
  approval?: ApprovalPolicy;
  /** `--sandbox`: where approved commands run. Default: {@link config}'s `sandbox`, else `workspace-write`. */
  sandbox?: SandboxMode;
  /** Queue, sub-agent and tool-round limits of its threads. Default: {@link config}'s `limits`. */
  limits?: Limits;
  /** `--max-tool-rounds`: rounds of tool calls per turn. Default: {@link limits}' `max_tool_rounds`, else 50. */
  maxToolRounds?: number;
  /** `--compact-at`: the share of the context window past which older turns are compacted. Default: {@link config}'s `compact_at`, else 0.8. */
  compactAt?: number;
  /** `--max-output-tokens`: tokens per model response. Default: {@link limits}' `max_output_tokens`, else the thread's. */
  maxOutputTokens?: number;
  /**
   * Evaluate the agent prompt (system prompt, tools, AGENTS.md) as soon as the model is loaded, and
   * pre-warm each new thread with it. Default: true.
   */
  prewarm?: boolean;
  /** Where transcripts go. Default: {@link sessionsDir}. */
  sessionsDir?: string;
  /** Progress of downloading and loading the model, for a spinner or bar. */
  onProgress?: (stage: "download" | "load", fraction: number) => void;
  /** Said once, e.g. when the client falls back from WebSocket to HTTP. */
  onNotice?: (message: string) => void;
  /**
   * The MCP servers, already started, when someone else lists them too (`spark serve`'s host);
   * the runtime disposes them. Default: a hub of {@link config}'s `mcpServers`, started here.
   */
  mcp?: McpHub;
  /**
   * The workspace's language servers, when the caller made them (with other budgets); the runtime
   * disposes them. Default: the built-in servers, unless the config's `[diagnostics]` turns them off.
   */
  diagnostics?: EditDiagnostics;
  /**
   * The hooks every thread runs. Default: the user's hooks.json and a trusted project's (see
   * loadHooks), read once here.
   */
  hooks?: HookSet;
  /**
   * The person's folder of skills (`skills/`) and agents (`agents/`). Default: the folder of the
   * user's config.toml (`~/.config/spark`). Null: none.
   */
  userDir?: string | null;
  /** The Spark worktree {@link cwd} is (`spark --worktree`), recorded in new threads' info. Default: none. */
  worktree?: WorktreeRef;
}

export interface NewThreadOptions {
  /**
   * Where the thread works when not in the runtime's workspace (a Spark worktree started from the
   * agent host): a real path; the thread gets that tree's workspace, AGENTS.md and language
   * servers. Default: the runtime's workspace.
   */
  cwd?: string;
  /** The worktree {@link cwd} is, recorded in a new thread's info. */
  worktree?: WorktreeRef;
  /** MCP servers for this thread only (see thread-mcp-servers.ts). Default: none. */
  mcpServers?: readonly ThreadMcpServer[];
}

/**
 * What `spark`, `spark exec` and `spark serve`'s agent host share: a model reached through the
 * Responses protocol (the embedded engine served on loopback, or a remote server), a workspace,
 * and the system prompt. Threads are created from it.
 */
export class AgentRuntime implements AsyncDisposable {
  /**
   * The workspace's MCP servers (config's `[mcp_servers]`), started in the background when the
   * runtime starts; their tools join each new thread at its first turn. The agent host lists it.
   */
  readonly mcp: McpHub;
  /**
   * The workspace's language servers, shared by its threads: started on the first edit of a file
   * they handle, stopped when idle and on dispose. Null with `[diagnostics] enabled = false`.
   */
  readonly diagnostics: EditDiagnostics | null;
  /** Scopes of the other trees threads were started in, by real path (see NewThreadOptions.cwd). */
  private readonly scopes = new Map<string, Promise<WorkspaceScope>>();
  /** MCP servers threads brought (NewThreadOptions.mcpServers), until their thread goes. */
  private readonly threadMcp = new Set<McpHub>();
  /**
   * The agent prompt's evaluation on the default model, started with the runtime (null with
   * `prewarm: false`): its progress is what the faces show while it runs.
   */
  promptWarmup: PromptWarmup | null = null;

  private constructor(
    readonly client: ResponsesClient,
    readonly workspace: Workspace,
    readonly instructions: string,
    /** The model (tier) new threads start on. */
    readonly modelId: string,
    /** The conversation budget: the embedded model's context, or 128K for a remote server. */
    readonly contextBudget: number,
    /** The tiers a session may switch to with /model (empty without a config). */
    readonly models: string[],
    /** The tier the `delegate` tool's sub-agents run on; null offers no delegate tool. */
    readonly delegateTier: string | null,
    private readonly options: AgentRuntimeOptions,
    private readonly owned: { server?: SparkServer; models?: ModelRegistry },
    /** How to open another connection like {@link client} (a sub-agent's). */
    private readonly connection: ResponsesClientOptions,
    /** The skills and defined agents of the person and of the repository, read at start. */
    readonly catalog: Catalog,
  ) {
    if (options.mcp) this.mcp = options.mcp;
    else {
      this.mcp = new McpHub({
        servers: options.config?.mcpServers ?? {},
        root: workspace.root,
        ...(options.onNotice ? { onNotice: options.onNotice } : {}),
      });
      this.mcp.start();
    }
    this.diagnostics =
      options.diagnostics ??
      (options.config?.diagnostics === false
        ? null
        : new EditDiagnostics({
            root: workspace.root,
            sandbox: new CommandSandbox({ mode: this.sandboxMode }),
            projectTrusted: () => isProjectTrusted(workspace.root),
          }));
  }

  static async start(started: AgentRuntimeOptions): Promise<AgentRuntime> {
    const options = { ...started, hooks: started.hooks ?? (await loadHooks(started.cwd)) };
    const workspace = new Workspace(options.cwd);
    const catalog = await loadCatalog({
      repoRoot: await findRepoRoot(workspace.root),
      userDir: options.userDir === undefined ? path.dirname(userConfigPath()) : options.userDir,
    });
    for (const problem of catalog.problems) options.onNotice?.(problem);
    const instructions = buildSystemPrompt(
      workspace.root,
      await discoverAgentsFiles(workspace.root, {
        ...(options.onNotice ? { onUnreadable: options.onNotice } : {}),
      }),
      { skills: catalog.skills, agents: catalog.agents },
    );
    if (options.server) {
      const connection: ResponsesClientOptions = {
        baseUrl: options.server,
        ...(options.apiKey ? { apiKey: options.apiKey } : {}),
      };
      const client = await ResponsesClient.connect({
        ...connection,
        ...(options.onNotice ? { onNotice: options.onNotice } : {}),
      });
      return new AgentRuntime(
        client,
        workspace,
        instructions,
        options.model ?? "",
        128_000,
        options.serverModels ?? [],
        null,
        options,
        {},
        connection,
        catalog,
      ).warmPrompt();
    }
    const config = options.config ?? {
      defaultTier: "fast",
      delegateTier: null,
      tiers: { fast: { engine: "llama" as const } },
      sources: [],
    };
    const choice = chooseTiers(config, {
      ...(options.model ? { model: options.model } : {}),
      ...(options.contextSize ? { contextSize: options.contextSize } : {}),
    });
    const replaced = engineReplacement();
    const load =
      options.loadTier ?? (replaced && replacedTierLoader(choice.defaultTier, replaced.startingTier));
    // Beside the load (bounded: 2 s per tool): whether a GPU sits unused is said once it is loaded.
    const gpuProbe =
      !load && (choice.tiers[choice.defaultTier]?.engine ?? "llama") === "llama" ? probeGpu() : null;
    const models = await tierRegistry(choice, {
      ...(load ? { load } : {}),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    });
    const engine = models.resolve(choice.defaultTier);
    if (engine instanceof LlamaEngine) {
      const notice = engineBuildNotice(engine.binary, engine.backend.backend);
      if (notice) options.onNotice?.(notice);
    }
    if (gpuProbe && engine instanceof LlamaEngine) {
      void unusedGpuNotice(gpuProbe, engine.backend.backend).then((notice) => {
        if (notice) options.onNotice?.(notice);
      });
    }
    // A per-process key: other local processes cannot drive the embedded server.
    const apiKey = randomBytes(24).toString("hex");
    const server = await SparkServer.start({
      models,
      apiKeys: [apiKey],
      admission: { tiers: tierAdmission({ ...config, tiers: choice.tiers }) },
    });
    const connection: ResponsesClientOptions = { baseUrl: `${server.url}/v1`, apiKey };
    const client = await ResponsesClient.connect({
      ...connection,
      ...(options.onNotice ? { onNotice: options.onNotice } : {}),
    });
    return new AgentRuntime(
      client,
      workspace,
      instructions,
      choice.defaultTier,
      engine.info.contextSize,
      Object.keys(choice.tiers),
      config.delegateTier,
      options,
      {
        server,
        models,
      },
      connection,
      catalog,
    ).warmPrompt();
  }

  /**
   * Starts evaluating the agent prompt now that the model is there (a model still loading in a
   * server is waited for there), while the person types: a request with exactly what a new thread
   * of the default model would pre-warm with (the MCP tools ready by now included). Its KV state is
   * saved per model and prompt, so a later start restores it instead.
   */
  private warmPrompt(): this {
    if (this.options.prewarm === false) return this;
    const dir = this.options.sessionsDir ?? sessionsDir();
    const own = { workspace: this.workspace, instructions: this.instructions, diagnostics: this.diagnostics };
    // It runs no turn: no hooks, no transcript.
    const { hooks: _, ...options } = this.threadOptions(own, this.modelId, dir);
    const thread = new AgentThread(options);
    this.promptWarmup = new PromptWarmup((onProgress) => thread.prewarm(onProgress));
    return this;
  }

  private get limits(): Limits | undefined {
    return this.options.limits ?? this.options.config?.limits;
  }

  private get compactAt(): number | undefined {
    return this.options.compactAt ?? this.options.config?.compactAt;
  }

  private get maxToolRounds(): number | undefined {
    return this.options.maxToolRounds ?? this.limits?.max_tool_rounds;
  }

  private get maxOutputTokens(): number | undefined {
    return this.options.maxOutputTokens ?? this.limits?.max_output_tokens;
  }

  /** Where this runtime's threads run approved commands. */
  get sandboxMode(): SandboxMode {
    return this.options.sandbox ?? this.options.config?.sandbox ?? "workspace-write";
  }

  /**
   * A new thread on `model` (default: {@link modelId}; pre-warmed unless disabled), or a saved
   * session continued. Its sub-agents get transcripts of their own.
   */
  async newThread(
    resumeFile?: string,
    model: string = this.modelId,
    place: NewThreadOptions = {},
  ): Promise<{ thread: AgentThread; transcript: SessionRecorder; mcp: McpHub | null }> {
    const resume = resumeFile ? await readSession(resumeFile) : undefined;
    const dir = this.options.sessionsDir ?? sessionsDir();
    const scope = await this.scopeOf(place.cwd);
    const named = { name: (file: string) => scope.workspace.relative(file), root: scope.workspace.root };
    // What goes wrong saving the session is a notice in the thread, which every face shows.
    const early: string[] = [];
    let notify = (message: string) => {
      early.push(message);
    };
    const checkpointsOptions = { ...named, onWarning: (message: string) => notify(message) };
    const checkpoints = resume
      ? await Checkpoints.open(checkpointsFile(resume.file), {
          ...checkpointsOptions,
          earlierTurns: resume.items.flatMap((item) => (item.type === "user_message" ? [item.id] : [])),
        })
      : Checkpoints.inMemory(checkpointsOptions);
    let ownMcp: McpHub | null = null;
    const thread = new AgentThread({
      ...this.threadOptions(scope, model, dir),
      ...(place.mcpServers?.length
        ? { moreTools: () => [...this.mcp.tools(), ...(ownMcp?.tools() ?? [])] }
        : {}),
      ...(resume ? { resume: { thread: resume.thread, items: resume.items } } : {}),
      checkpoints,
    });
    if (!resume) checkpoints.storeIn(checkpointsFile(path.join(dir, `${thread.info.id}.jsonl`)));
    const worktree = place.cwd ? place.worktree : this.options.worktree;
    if (!resume && worktree) thread.info.worktree = worktree;
    // A new session is written from its first user message on: one never used leaves no file.
    const say = (message: string) => notify(message);
    const transcript = resume
      ? await SessionRecorder.resume(thread, resume.file, say)
      : SessionRecorder.create(thread, dir, say);
    // The recorder hears each event first: an item is on disk before any face hears of it.
    thread.on((event) => {
      transcript.observe(event);
      if (event.type === "turn.completed") transcript.saveThread(thread.info);
    });
    notify = (message) => thread.notice(message);
    for (const message of early.splice(0)) notify(message);
    // Started before the first turn, whose tools are the thread's from then on.
    ownMcp = await startThreadMcpServers(place.mcpServers ?? [], {
      root: scope.workspace.root,
      taken: this.mcp.list().map((server) => server.name),
      trusted: () => isProjectTrusted(scope.workspace.root),
      onNotice: (message) => notify(message),
    });
    if (ownMcp) this.threadMcp.add(ownMcp);
    if (this.options.prewarm ?? true) {
      // Once the runtime's own evaluation of the prompt is over, this finds the prompt cached
      // (not evaluated a second time beside it).
      await this.promptWarmup?.done;
      await thread.prewarm();
    }
    return { thread, transcript, mcp: ownMcp };
  }

  /** Ends the MCP servers a thread brought (the host let it go). */
  async releaseThreadMcp(hub: McpHub): Promise<void> {
    this.threadMcp.delete(hub);
    await hub.dispose();
  }

  /** What a new thread on `model` in `scope` is made with (before a resumed session's part). */
  private threadOptions(scope: WorkspaceScope, model: string, dir: string): AgentThreadOptions<AgentThread> {
    return {
      client: this.client,
      workspace: scope.workspace,
      instructions: scope.instructions,
      model,
      approvalPolicy: this.options.approval ?? "ask",
      sandbox: new CommandSandbox({ mode: this.sandboxMode }),
      ...(scope.diagnostics ? { diagnostics: scope.diagnostics } : {}),
      contextBudget: this.contextBudget,
      ...(this.maxToolRounds ? { maxToolRounds: this.maxToolRounds } : {}),
      ...(this.compactAt !== undefined ? { compactAt: this.compactAt } : {}),
      ...(this.maxOutputTokens ? { maxOutputTokens: this.maxOutputTokens } : {}),
      moreTools: () => this.mcp.tools(),
      ...(this.options.hooks ? { hooks: this.options.hooks } : {}),
      ...queueLimits(this.limits),
      skills: this.catalog.skills,
      // Without a delegate tier, defined agents still run: on their own tier, else the thread's.
      ...(this.delegateTier || this.catalog.agents.length > 0
        ? {
            delegate: {
              model: this.delegateTier ?? model,
              ...(this.contextFor(this.delegateTier ?? model)
                ? { contextBudget: this.contextFor(this.delegateTier ?? model)! }
                : {}),
              connect: () => ResponsesClient.connect(this.connection),
              ...(this.limits?.max_subagents ? { maxRunning: this.limits.max_subagents } : {}),
              onThread: (sub) => recordTranscript(sub, dir, this.options.onNotice),
              agents: this.catalog.agents,
              tiers: this.models,
            },
          }
        : {}),
    };
  }

  /** The runtime's own scope, or the one of `cwd` (made once per tree). */
  private async scopeOf(cwd: string | undefined): Promise<WorkspaceScope> {
    const own = { workspace: this.workspace, instructions: this.instructions, diagnostics: this.diagnostics };
    if (cwd === undefined || cwd === this.workspace.root) return own;
    let scope = this.scopes.get(cwd);
    if (!scope) {
      scope = openWorkspaceScope(cwd, {
        diagnostics: this.options.config?.diagnostics !== false,
        sandbox: this.sandboxMode,
        ...(this.options.onNotice ? { onNotice: this.options.onNotice } : {}),
      });
      this.scopes.set(cwd, scope);
      scope.catch(() => this.scopes.delete(cwd));
    }
    return scope;
  }

  /** Where the default tier computes (`backend cpu, CPU variant zen4, 2 threads`) when it is embedded here. */
  get compute(): string | null {
    const engine = this.owned.models?.resolve(this.modelId);
    return engine instanceof LlamaEngine ? describeBackend(engine.backend, engine.threads) : null;
  }

  /** The context size of a tier's engine when it is known (embedded and loaded). */
  contextFor(model: string): number | undefined {
    try {
      return this.owned.models?.resolve(model).info.contextSize;
    } catch {
      return undefined;
    }
  }

  async dispose(): Promise<void> {
    const scopes = await Promise.all([...this.scopes.values()].map((scope) => scope.catch(() => null)));
    await Promise.all([
      this.mcp.dispose(),
      ...[...this.threadMcp].map((hub) => hub.dispose()),
      this.diagnostics?.dispose(),
      ...scopes.map((scope) => scope?.diagnostics?.dispose()),
    ]);
    await this.client.close();
    await this.owned.server?.close();
    await this.owned.models?.dispose();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }
}

/** Gives a sub-agent's thread a transcript of its own; a failure to save it goes to `onNotice`. */
function recordTranscript(thread: AgentThread, dir: string, onNotice?: (message: string) => void): void {
  const transcript = Transcript.start(dir, thread.info, {
    onError: (error) => onNotice?.(`A sub-agent's session could not be saved: ${error.message}`),
  });
  thread.on((event) => {
    transcript.observe(event);
    if (event.type === "turn.completed") transcript.saveThread(thread.info);
  });
}

/** The queue limits of `[limits]` in the thread's terms. */
function queueLimits(limits: Limits | undefined): { maxQueuedTurns?: number; maxQueuedBytes?: number } {
  return {
    ...(limits?.max_queued_turns ? { maxQueuedTurns: limits.max_queued_turns } : {}),
    ...(limits?.max_queued_mb ? { maxQueuedBytes: limits.max_queued_mb * 1024 * 1024 } : {}),
  };
}
