import { randomUUID } from "node:crypto";
import type { ResponsesClient } from "../client/responses-client.js";
import type { SubAgentInfo, ThreadEvent, ThreadInfo } from "../protocol/agent.js";
import { SparkError } from "../protocol/errors.js";
import type { AgentDefinition, AgentRun } from "./definitions/agent-definitions.js";
import { ToolError } from "./tools/tool-error.js";

/**
 * What sub-agents need of a thread (AgentThread fits). Owned here so that this module does not
 * import the thread that uses it.
 */
export interface SubAgentThread {
  readonly info: ThreadInfo;
  on(listener: (event: ThreadEvent) => void): () => void;
  startTurn(input: string): Promise<void>;
  interrupt(): void;
  respondToApproval(approvalId: string, approved: boolean): boolean;
}

/** Where sub-agents run: the `delegate` tool is offered when a thread has one. */
export interface DelegateOptions<Thread extends SubAgentThread = SubAgentThread> {
  /** The model (tier) sub-agents run on, e.g. `deep`. */
  model: string;
  /** Token budget of a sub-agent's conversation. Default: the parent's. */
  contextBudget?: number;
  /**
   * Opens the sub-agent's own connection to the server (closed when it ends), used when the
   * parent's client is not on a WebSocket; otherwise a sub-agent runs on a lane of the parent's
   * socket (its responses beside the parent's, not behind them).
   */
  connect: () => Promise<ResponsesClient>;
  /** Told of each new sub-agent's thread before it starts (e.g. to give it a transcript). */
  onThread?: (thread: Thread, info: SubAgentInfo) => void;
  /** Sub-agents running at once per thread; `delegate` answers an error at the cap. Default: 4. */
  maxRunning?: number;
  /** The agents people defined, which `delegate` may name (see agent-definitions.ts). Default: none. */
  agents?: readonly AgentDefinition[];
  /** The session's tiers, the ones an agent may run on; empty with a remote server. Default: none. */
  tiers?: readonly string[];
}

export interface SubAgentsOptions<Thread extends SubAgentThread> {
  /**
   * Makes the sub-agent's thread: same workspace, client and approval policy (its commands ask the
   * person, through the parent), no `delegate` tool; as a defined agent, with `agent`'s
   * instructions and tools.
   */
  createThread: (model: string, client: ResponsesClient, agent?: AgentRun) => Thread;
  /**
   * How the defined agent `name` runs (agentRun with the parent's instructions and tools); throws
   * a ToolError for the model when it cannot.
   */
  resolveAgent: (name: string) => AgentRun;
  /** The parent thread's client: sub-agents take lanes of its WebSocket. */
  client: ResponsesClient;
  delegate: DelegateOptions<Thread>;
  /** Narrates `subagent.*` events (and the sub-agents' approvals) on the parent thread. */
  emit: (event: ThreadEvent) => void;
  /** Called once a sub-agent ended, with the message for the parent conversation. */
  deliver: (message: string) => void;
}

interface Entry<Thread> {
  info: SubAgentInfo;
  /** Resolves once it ended and its result was handed on. */
  ended: Promise<void>;
  /** Ended by {@link SubAgents.cancelAll}: nothing is delivered to the parent. */
  quiet: boolean;
  /** Null while its connection opens. */
  thread: Thread | null;
}

/**
 * A thread's background sub-agents: each a thread of its own on the delegate model, started by
 * the `delegate` tool. Their narration is reduced to small `subagent.*` events on the parent;
 * their approval requests pass through the parent (so the UI asks the person as usual).
 */
export class SubAgents<Thread extends SubAgentThread> {
  private readonly entries = new Map<string, Entry<Thread>>();

  constructor(private readonly options: SubAgentsOptions<Thread>) {}

  list(): SubAgentInfo[] {
    return [...this.entries.values()].map((entry) => ({ ...entry.info }));
  }

  /**
   * Starts `task` in the background; returns the sub-agent's id at once. Throws a ToolError the
   * model can act on when `maxRunning` sub-agents run already.
   */
  start(task: string, context: string | undefined, agent?: string): string {
    const run = agent === undefined ? undefined : this.options.resolveAgent(agent);
    const maxRunning = this.options.delegate.maxRunning ?? 4;
    if (this.running >= maxRunning) {
      throw new ToolError(
        "not_allowed",
        `${maxRunning} sub-agents are running already, the most at once. Wait for a result to arrive ` +
          "(it comes as a message), or do this task yourself.",
      );
    }
    const id = `sub_${randomUUID().replaceAll("-", "").slice(0, 8)}`;
    const info: SubAgentInfo = {
      id,
      task,
      model: run?.model ?? this.options.delegate.model,
      status: "running",
      outputTokens: 0,
      progress: "starting",
    };
    const entry: Entry<Thread> = { info, thread: null, ended: Promise.resolve(), quiet: false };
    this.entries.set(id, entry);
    this.options.emit({ type: "subagent.started", subagent: { ...info } });
    entry.ended = this.run(entry, context ? `${task}\n\nContext:\n${context}` : task, run).then(
      (result) => this.finish(entry, result, undefined),
      (error: unknown) => this.finish(entry, undefined, SparkError.from(error).message),
    );
    return id;
  }

  /** Runs the sub-agent's turn; resolves with its last message, rejects with why it failed. */
  private async run(entry: Entry<Thread>, input: string, agent: AgentRun | undefined): Promise<string> {
    const { info } = entry;
    const parent = this.options.client;
    const client = parent.transport === "websocket" ? parent.lane() : await this.options.delegate.connect();
    try {
      if (info.status !== "running") return "";
      const thread = this.options.createThread(info.model, client, agent);
      entry.thread = thread;
      this.options.delegate.onThread?.(thread, { ...info });
      let lastMessage = "";
      let failure: string | undefined;
      let sinceProgress = 0;
      thread.on((event) => {
        if (event.type === "approval.requested" || event.type === "approval.resolved")
          this.options.emit(event);
        else if (event.type === "item.delta") {
          info.outputTokens++;
          info.progress = "writing";
          if (++sinceProgress >= 16) {
            sinceProgress = 0;
            this.progress(info);
          }
        } else if (event.type === "item.started" && event.item.type === "tool_call") {
          info.progress = event.item.name;
          this.progress(info);
        } else if (event.type === "item.completed" && event.item.type === "agent_message") {
          lastMessage = event.item.text;
        } else if (event.type === "turn.completed" && event.status === "failed") {
          failure = event.error?.message ?? "the turn failed";
        }
      });
      await thread.startTurn(input);
      if (failure !== undefined) throw new SparkError("server_error", failure);
      return lastMessage || "(no answer)";
    } finally {
      await client.close();
    }
  }

  private finish(entry: Entry<Thread>, result: string | undefined, failure: string | undefined): void {
    const { info } = entry;
    if (info.status === "running") info.status = failure === undefined ? "completed" : "failed";
    const status = info.status as Exclude<SubAgentInfo["status"], "running">;
    const error =
      status === "failed"
        ? (failure ?? "it failed")
        : status === "cancelled"
          ? "it was cancelled"
          : undefined;
    info.progress = status;
    this.options.emit({
      type: "subagent.completed",
      subagent_id: info.id,
      status,
      ...(status === "completed" ? { result } : {}),
      ...(error !== undefined ? { error } : {}),
    });
    if (entry.quiet) return;
    this.options.deliver(
      status === "completed"
        ? `Result of sub-agent ${info.id} (${info.task}): ${result}`
        : `Sub-agent ${info.id} (${info.task}) ${status === "failed" ? "failed" : "was cancelled"}: ${error}.`,
    );
  }

  /** Interrupts a running sub-agent (its model stream is cancelled); false when none such runs. */
  cancel(id: string): boolean {
    const entry = this.entries.get(id);
    if (entry?.info.status !== "running") return false;
    entry.info.status = "cancelled";
    entry.thread?.interrupt();
    return true;
  }

  /** Cancels every running sub-agent without telling the parent's conversation (teardown). */
  cancelAll(): void {
    for (const entry of this.entries.values()) {
      if (entry.info.status === "running") entry.quiet = true;
      this.cancel(entry.info.id);
    }
  }

  get running(): number {
    return [...this.entries.values()].filter((entry) => entry.info.status === "running").length;
  }

  /** Resolves once every sub-agent started so far has ended and been reported. */
  async settled(): Promise<void> {
    await Promise.all([...this.entries.values()].map((entry) => entry.ended));
  }

  /** Passes an approval answer on to the sub-agent that asked; false when none had it pending. */
  respondToApproval(approvalId: string, approved: boolean): boolean {
    for (const { thread } of this.entries.values()) {
      if (thread?.respondToApproval(approvalId, approved)) return true;
    }
    return false;
  }

  private progress(info: SubAgentInfo): void {
    this.options.emit({
      type: "subagent.progress",
      subagent_id: info.id,
      output_tokens: info.outputTokens,
      progress: info.progress,
    });
  }
}
