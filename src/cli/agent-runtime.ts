import { randomBytes } from "node:crypto";
import { AgentThread } from "../agent/agent-thread.js";
import { discoverAgentsFiles } from "../agent/agents-md.js";
import type { ApprovalPolicy } from "../agent/approval.js";
import { buildSystemPrompt } from "../agent/system-prompt.js";
import { readSession, sessionsDir, Transcript } from "../agent/transcript.js";
import { Workspace } from "../agent/workspace.js";
import { ResponsesClient } from "../client/responses-client.js";
import type { Engine } from "../engine/engine.js";
import { LlamaEngine } from "../engine/llama/llama-engine.js";
import { ScriptedEngine, type ScriptedEngineOptions } from "../engine/scripted/scripted-engine.js";
import { resolveModel } from "../models/resolve-model.js";
import { ModelRegistry } from "../server/model-registry.js";
import { SparkServer } from "../server/spark-server.js";

export interface AgentRuntimeOptions {
  /** The workspace root. */
  cwd: string;
  /** `--model`: a GGUF path or hf: URI for the embedded engine, or the model id for `--server`. */
  model?: string;
  /** `--server`: a Responses-compatible endpoint (`http://host:port/v1`) instead of the embedded engine. */
  server?: string;
  apiKey?: string;
  /** Embedded engine. Default: llama. `scripted` is for demos and tests. */
  engine?: "llama" | "scripted";
  /** Embedded engine: tokens of context. Default: the model's, at most 32768. */
  contextSize?: number;
  scripted?: ScriptedEngineOptions;
  allowShell?: boolean;
  approval?: ApprovalPolicy;
  /** Pre-warm each new thread with its system prompt and tools. Default: true. */
  prewarm?: boolean;
  /** Where transcripts go. Default: {@link sessionsDir}. */
  sessionsDir?: string;
  /** Progress of downloading and loading the model, for a spinner or bar. */
  onProgress?: (stage: "download" | "load", fraction: number) => void;
  /** Said once, e.g. when the client falls back from WebSocket to HTTP. */
  onNotice?: (message: string) => void;
}

/**
 * What `spark`, `spark exec` and `spark serve`'s agent host share: a model reached through the
 * Responses protocol (the embedded engine served on loopback, or a remote server), a workspace,
 * and the system prompt. Threads are created from it.
 */
export class AgentRuntime implements AsyncDisposable {
  private constructor(
    readonly client: ResponsesClient,
    readonly workspace: Workspace,
    readonly instructions: string,
    readonly modelId: string,
    /** The conversation budget: the embedded model's context, or 128K for a remote server. */
    readonly contextBudget: number,
    private readonly options: AgentRuntimeOptions,
    private readonly owned: { server?: SparkServer; models?: ModelRegistry },
  ) {}

  static async start(options: AgentRuntimeOptions): Promise<AgentRuntime> {
    const workspace = new Workspace(options.cwd);
    const instructions = buildSystemPrompt(workspace.root, await discoverAgentsFiles(workspace.root));
    if (options.server) {
      const client = await ResponsesClient.connect({
        baseUrl: options.server,
        ...(options.apiKey ? { apiKey: options.apiKey } : {}),
        ...(options.onNotice ? { onNotice: options.onNotice } : {}),
      });
      return new AgentRuntime(client, workspace, instructions, options.model ?? "", 128_000, options, {});
    }
    const engine = await loadEngine(options);
    const models = new ModelRegistry();
    models.add(engine.info.id, engine);
    // A per-process key: other local processes cannot drive the embedded server.
    const apiKey = randomBytes(24).toString("hex");
    const server = await SparkServer.start({ models, apiKeys: [apiKey] });
    const client = await ResponsesClient.connect({
      baseUrl: `${server.url}/v1`,
      apiKey,
      ...(options.onNotice ? { onNotice: options.onNotice } : {}),
    });
    return new AgentRuntime(
      client,
      workspace,
      instructions,
      engine.info.id,
      engine.info.contextSize,
      options,
      {
        server,
        models,
      },
    );
  }

  /** A new thread (pre-warmed unless disabled), or a saved session continued. */
  async newThread(resumeFile?: string): Promise<{ thread: AgentThread; transcript: Transcript }> {
    const resume = resumeFile ? await readSession(resumeFile) : undefined;
    const thread = new AgentThread({
      client: this.client,
      workspace: this.workspace,
      instructions: this.instructions,
      model: this.modelId,
      allowShell: this.options.allowShell ?? false,
      approvalPolicy: this.options.approval ?? "ask",
      contextBudget: this.contextBudget,
      ...(resume ? { resume: { thread: resume.thread, items: resume.items } } : {}),
    });
    const dir = this.options.sessionsDir ?? sessionsDir();
    const transcript = resume
      ? await Transcript.open(resume.file)
      : await Transcript.create(dir, thread.info);
    thread.on((event) => {
      transcript.observe(event);
      if (event.type === "turn.completed") transcript.saveThread(thread.info);
    });
    if (this.options.prewarm ?? true) await thread.prewarm();
    return { thread, transcript };
  }

  async dispose(): Promise<void> {
    await this.client.close();
    await this.owned.server?.close();
    await this.owned.models?.dispose();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }
}

async function loadEngine(options: AgentRuntimeOptions): Promise<Engine> {
  if (options.engine === "scripted") return new ScriptedEngine(options.scripted);
  const resolved = await resolveModel(options.model, {
    onProgress: (p) => options.onProgress?.("download", p.totalBytes ? p.receivedBytes / p.totalBytes : 0),
  });
  return LlamaEngine.create({
    modelPath: resolved.path,
    ...(options.contextSize ? { contextSize: options.contextSize } : {}),
    onLoadProgress: (fraction) => options.onProgress?.("load", fraction),
  });
}
