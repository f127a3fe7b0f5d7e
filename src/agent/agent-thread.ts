import { randomUUID } from "node:crypto";
import type { DraftAnswer } from "../client/responses-client.js";
import type {
  AgentMode,
  ContextUsage,
  PatchResolution,
  RewindRestore,
  SubAgentInfo,
  ThreadInfo,
  ThreadItem,
} from "../protocol/agent.js";
import type { TurnToolChoice } from "../protocol/agent-requests.js";
import { SparkError } from "../protocol/errors.js";
import type { AgentThreadOptions } from "./agent-thread-options.js";
import { Checkpoints } from "./checkpoints.js";
import { type Compacted, ContextCompaction } from "./context-compaction.js";
import { historyFromItems } from "./conversation-history.js";
import { namedAgentRun } from "./definitions/agent-definitions.js";
import { EditJournal } from "./edit-journal.js";
import { ThreadHooks } from "./hooks/thread-hooks.js";
import { ItemLog, newTurnId, type ThreadListener } from "./item-log.js";
import { expandMentions } from "./mentions/file-mentions.js";
import { rankFiles } from "./mentions/fuzzy-file-rank.js";
import { WorkspaceFileList } from "./mentions/workspace-files.js";
import { PatchReview } from "./patch-review.js";
import { PendingApprovals } from "./pending-approvals.js";
import { defaultMaxOutputTokens, requestSettings } from "./request-settings.js";
import { ResponseChain } from "./response-chain.js";
import { CommandSandbox } from "./sandbox/command-sandbox.js";
import { type SessionDiff, sessionDiff } from "./session-diff.js";
import { SubAgents } from "./sub-agents.js";
import { type Rewound, ThreadRewind } from "./thread-rewind.js";
import { toolsFor } from "./tools/index.js";
import type { Tool, ToolContext } from "./tools/tool.js";
import { type QueuedTurn, TurnInbox } from "./turn-inbox.js";
import { type ActiveTurn, TurnRunner } from "./turn-runner.js";
import { TurnSteers } from "./turn-steers.js";

/**
 * One conversation with the coding agent. It talks to a model only through the Responses client,
 * runs tools on the workspace, and narrates everything as thread events (the terminal UI, the agent
 * host and `spark exec` all listen to the same events). It knows nothing of any UI.
 *
 * The concerns live beside it: the item log and its events (item-log.ts), the response chain
 * (response-chain.ts), the turn loop with tool dispatch (turn-runner.ts), the context meter and
 * compaction (context-compaction.ts), approvals
 * (pending-approvals.ts), patch review (patch-review.ts), the settings every request repeats
 * (request-settings.ts), sub-agents (sub-agents.ts), input steered into or queued behind the running
 * turn (turn-inbox.ts) and rewinds (thread-rewind.ts). This class starts and interrupts turns and is
 * the one public face of all of them.
 */
export class AgentThread {
  readonly info: ThreadInfo;
  readonly journal = new EditJournal();
  private readonly log: ItemLog;
  private readonly chain: ResponseChain;
  private readonly inbox: TurnInbox;
  private readonly approvals: PendingApprovals;
  private readonly patches: PatchReview;
  private readonly runner: TurnRunner;
  private readonly rewinder: ThreadRewind;
  private readonly context: ContextCompaction;
  private active: ActiveTurn | null = null;
  private idle: Promise<void> = Promise.resolve();
  private readonly subs: SubAgents<AgentThread> | null;
  private readonly sandbox: CommandSandbox;
  /**
   * The tools listed with every request: the same on every turn, part of the cached prefix. Spark's
   * own from the start; {@link AgentThreadOptions.moreTools} join when the first turn starts.
   */
  private readonly tools: Tool[];
  private toolsFixed = false;

  /** The workspace's files for `@` mentions, listed on first use. */
  private fileList: WorkspaceFileList | null = null;
  /** Every turn's edits, for rewinding code and for the session's diff. */
  private readonly checkpoints: Checkpoints;

  constructor(private readonly options: AgentThreadOptions<AgentThread>) {
    this.checkpoints =
      options.checkpoints ?? Checkpoints.inMemory({ name: (path) => options.workspace.relative(path) });
    const now = new Date().toISOString();
    this.info = options.resume?.thread ?? {
      id: `thr_${randomUUID().replaceAll("-", "").slice(0, 20)}`,
      title: "New session",
      cwd: options.workspace.root,
      model: options.model ?? "",
      createdAt: now,
      updatedAt: now,
    };
    this.sandbox = options.sandbox ?? new CommandSandbox();
    this.log = new ItemLog(options.resume?.items);
    this.chain = new ResponseChain(options.resume ? historyFromItems(options.resume.items) : null);
    const emit = this.log.emit.bind(this.log);
    this.inbox = new TurnInbox({
      client: options.client,
      log: this.log,
      maxQueuedTurns: options.maxQueuedTurns,
      maxQueuedBytes: options.maxQueuedBytes,
      mentions: (input) => expandMentions(input, options.workspace),
    });
    this.approvals = new PendingApprovals({
      policy: options.approvalPolicy,
      emit,
      runningCall: (turnId) => this.log.runningCall(turnId),
    });
    this.patches = new PatchReview({
      journal: this.journal,
      workspace: options.workspace,
      items: this.log.items,
    });
    this.rewinder = new ThreadRewind({
      log: this.log,
      chain: this.chain,
      journal: this.journal,
      checkpoints: this.checkpoints,
      workspace: options.workspace,
    });
    // A sub-agent answers its parent in prose: the thread's structured output is not theirs.
    const { delegate, resume: _, checkpoints: __, textFormat: ___, ...inherited } = options;
    this.subs = delegate
      ? new SubAgents<AgentThread>({
          createThread: (model, client, agent) =>
            new AgentThread({
              ...inherited,
              client,
              model,
              ...(delegate.contextBudget ? { contextBudget: delegate.contextBudget } : {}),
              ...(agent ? { instructions: agent.instructions, allowedTools: agent.tools } : {}),
            }),
          resolveAgent: (name) =>
            namedAgentRun(delegate.agents ?? [], name, {
              instructions: this.options.instructions,
              parentTools: this.offeredTools(),
              delegateModel: delegate.model,
              tiers: delegate.tiers ?? [],
            }),
          client: options.client,
          delegate,
          emit,
          // A result is never refused: the sub-agent cap bounds how many can wait.
          deliver: (message) => this.queueTurn(message),
        })
      : null;
    this.tools = this.allowed(
      toolsFor({ delegate: this.subs !== null, skills: (options.skills ?? []).length > 0 }),
    );
    const hooks = options.hooks
      ? new ThreadHooks({
          set: options.hooks,
          sandbox: this.sandbox,
          root: options.workspace.root,
          sessionId: this.info.id,
          log: this.log,
          resumed: options.resume !== undefined,
        })
      : undefined;
    this.context = new ContextCompaction({
      chain: this.chain,
      log: this.log,
      settings: () => this.requestSettings(),
      contextBudget: options.contextBudget,
      compactAt: options.compactAt,
      hooks,
    });
    this.runner = new TurnRunner({
      client: options.client,
      chain: this.chain,
      log: this.log,
      info: this.info,
      journal: this.journal,
      tools: this.tools,
      settings: () => this.requestSettings(),
      toolContext: (turn) => this.toolContext(turn),
      context: this.context,
      maxToolRounds: options.maxToolRounds,
      hooks,
    });
  }

  /** The model requests are sent to. */
  get model(): string {
    return this.options.model ?? "";
  }

  /**
   * Sends the following turns to `model` (a tier). A response chain cannot continue across models,
   * so the next request starts a new chain with the conversation resent.
   */
  setModel(model: string): void {
    if (model === this.model) return;
    if (this.active) throw new SparkError("response_in_progress", "Switch models between turns.");
    this.options.model = model;
    this.info.model = model;
    this.chain.owedOutputs = [];
    this.chain.startOver(historyFromItems(this.log.items));
  }

  /** The background sub-agents this thread started (running and ended). */
  get subAgents(): SubAgentInfo[] {
    return this.subs?.list() ?? [];
  }

  /** Cancels a running sub-agent: its turn is interrupted and its model stream cancelled. */
  cancelSubAgent(id: string): boolean {
    return this.subs?.cancel(id) ?? false;
  }

  /** Cancels every running sub-agent; their ends are not reported to the conversation. */
  cancelSubAgents(): void {
    this.subs?.cancelAll();
  }

  /**
   * Resolves when no turn runs and no sub-agent is running: each sub-agent's result has arrived
   * and the turn it started has ended (what `spark exec` waits for).
   */
  async whenSettled(): Promise<void> {
    for (;;) {
      await this.idle;
      if (this.subs && this.subs.running > 0) await this.subs.settled();
      else if (!this.active) return;
    }
  }

  /** Subscribes to the thread's events; returns the unsubscribe function. */
  on(listener: ThreadListener): () => void {
    return this.log.on(listener);
  }

  get busy(): boolean {
    return this.active !== null;
  }

  /** The running turn's id (what its `turn.started` carried), or null when idle. */
  get turnId(): string | null {
    return this.active?.id ?? null;
  }

  get history(): readonly ThreadItem[] {
    return this.log.items;
  }

  /**
   * Shows `text` to every face as a notice in the thread: a problem beside the turns' own work,
   * such as a transcript that cannot be saved (see runtime/session-recorder.ts).
   */
  notice(text: string): void {
    this.log.complete(this.active?.id ?? "", {
      type: "notice",
      id: `item_${randomUUID().slice(0, 8)}`,
      text,
    });
  }

  /**
   * Evaluates the system prompt and tool definitions into the server's state (`generate: false`),
   * so the first question starts decoding at once. `onProgress` hears the prompt tokens evaluated
   * so far of those to evaluate (none when the server had them all cached or does not say).
   */
  async prewarm(onProgress?: (evaluated: number, total: number) => void): Promise<void> {
    const { input } = this.chain.next([], { consume: true });
    const stream = this.options.client.create({ ...this.requestSettings(), input, generate: false });
    // Pre-warm produces no output; the events only say how far the prompt's evaluation is.
    for await (const event of stream) {
      if (event.type === "response.prefill.progress")
        onProgress?.(event.evaluated_tokens, event.total_tokens);
    }
    const response = await stream.final;
    this.chain.advance(response.id);
    // A resumed conversation is measured here: its first turn compacts it first when it is too long.
    if (response.usage) this.chain.lastTokens = response.usage.input_tokens;
  }

  /** How full the context is (as `context.updated` reports it). */
  get contextUsage(): ContextUsage {
    return this.context.usage();
  }

  /**
   * `/compact`: compacts the older turns now (see ContextCompaction), keeping `focus` in view.
   * Refused with `response_in_progress` while a turn runs. Null when nothing is old enough to
   * compact; a notice says so.
   */
  async compact(focus?: string): Promise<Compacted | null> {
    if (this.active)
      throw new SparkError("response_in_progress", "A turn is running; compact once it ends.", {
        param: "thread_id",
      });
    const turn = { id: "", controller: new AbortController(), mode: this.mode };
    const compacted = await this.context.compact(turn, {
      trigger: "manual",
      ...(focus ? { focus } : {}),
      // A turn that started while the PreCompact hooks ran has the chain now.
      stillWanted: () => !this.active,
    });
    if (compacted === "cancelled")
      throw new SparkError("response_in_progress", "A turn started; compact once it ends.", {
        param: "thread_id",
      });
    if (!compacted)
      this.notice(
        `Nothing to compact yet: the conversation holds ${this.chain.lastTokens.toLocaleString("en-US")} tokens and its last turn stays whole.`,
      );
    return compacted;
  }

  /** Enter: starts a turn when idle; while a turn runs, steers it. */
  submit(input: string): void {
    if (this.active) this.steer(input);
    else this.startTurn(input);
  }

  /** Turns waiting behind the running one. */
  get queuedTurns(): number {
    return this.inbox.length;
  }

  /**
   * Tab: runs `input` as the next turn once the current one ends. Throws `limit_reached` when
   * the queue holds `maxQueuedTurns` turns or `maxQueuedBytes` bytes already; nothing is dropped.
   */
  enqueue(input: string): string {
    if (this.active) this.inbox.checkRoom(input);
    return this.queueTurn(input);
  }

  /** Queues `input` (or starts it when idle); returns the id of its turn. */
  private queueTurn(input: string): string {
    if (this.active) return this.inbox.push(input);
    this.startTurn(input);
    return this.active!.id;
  }

  /** The mode of the next turns (see AgentMode); a running turn keeps the mode it started in. */
  get mode(): AgentMode {
    return this.info.mode ?? "default";
  }

  /** Sets the mode of the next turns; the prompt prefix stays the same (see plan-mode.ts). */
  setMode(mode: AgentMode): void {
    if (mode === "plan") this.info.mode = mode;
    else delete this.info.mode;
  }

  /**
   * Starts a turn and resolves when it (and anything queued behind it) has finished.
   * `toolChoice` forces its first model response to call a tool (or that one); `mode` becomes the
   * thread's mode (see setMode) from this turn on; `outputSchema` is the JSON Schema every model
   * response of this turn is asked to answer in (`text.format`), so its final message conforms.
   */
  startTurn(
    input: string,
    options: {
      toolChoice?: TurnToolChoice | undefined;
      mode?: AgentMode | undefined;
      outputSchema?: Record<string, unknown> | undefined;
    } = {},
  ): Promise<void> {
    if (this.active)
      throw new SparkError(
        "response_in_progress",
        "A turn is already running; steer it or queue the message.",
      );
    if (options.mode) this.setMode(options.mode);
    this.idle = this.runTurns({ id: newTurnId(), input }, options.toolChoice, options.outputSchema);
    return this.idle;
  }

  /**
   * The workspace files that match `query` best (fuzzy, for an `@` mention), best first, relative to
   * the workspace; the listing is read again once it is a few seconds old. `limit` default: 8.
   */
  async workspaceFiles(query: string, limit?: number): Promise<string[]> {
    this.fileList ??= new WorkspaceFileList(this.options.workspace.root);
    return rankFiles(await this.fileList.files(), query, limit);
  }

  /** `/diff`: each file the session's edits changed, from before its first edit to now (bounded). */
  sessionDiff(): Promise<SessionDiff> {
    return sessionDiff(this.checkpoints.originals(), this.options.workspace);
  }

  /** Resolves when no turn is running. */
  whenIdle(): Promise<void> {
    return this.idle;
  }

  /**
   * Redirects the running turn: the model continues from where it is, with `input` added. A steer
   * never vanishes: one the response refuses (it ended as the steer came) starts the turn's next
   * response; a turn that has decided to end runs it as the next turn; one the turn can no longer
   * take (it was interrupted, failed or hit its round limit) is reported by a notice.
   */
  steer(input: string): void {
    if (this.active) this.inbox.steer(this.active, input);
    else this.startTurn(input);
  }

  /**
   * Type-ahead: sends `text`, the message being typed, as a draft of the next turn's request (the
   * chain, instructions and tools that turn would send), so the server evaluates its settled part
   * before Enter. It never changes the turn. Not sent while a turn runs (the model is busy).
   */
  draft(text: string): Promise<DraftAnswer> {
    if (this.active) return Promise.resolve({ outcome: "not_sent", prefixTokens: 0, evaluatedTokens: 0 });
    // The prefix is the same on every turn (the tools never change), so the draft matches it.
    const { model, instructions, tools } = this.requestSettings();
    return this.options.client.draft({
      model,
      instructions,
      tools,
      ...this.chain.next(this.chain.owedOutputs, { consume: false }),
      draft: text,
    });
  }

  /** Esc: stops the running turn at once. Pending tool calls are answered as aborted. */
  interrupt(): void {
    const turn = this.active;
    if (!turn) return;
    this.inbox.clear();
    turn.controller.abort();
    turn.stream?.cancel();
    this.approvals.denyAll();
  }

  /**
   * Answers a pending approval of this thread or of one of its sub-agents; false when none by that
   * id is pending (already answered, or its turn was interrupted).
   */
  respondToApproval(approvalId: string, approved: boolean): boolean {
    if (this.approvals.respond(approvalId, approved)) return true;
    return this.subs?.respondToApproval(approvalId, approved) ?? false;
  }

  /** Reverts the last applied patch byte for byte; returns the files it restored. */
  async undo(): Promise<string[]> {
    return (await this.undoPatch())?.paths ?? [];
  }

  /**
   * Reverts the last applied patch byte for byte: the tool call that applied it (null if unknown)
   * and the files restored, relative to the workspace; null when there is nothing to undo.
   */
  undoPatch(): Promise<{ itemId: string | null; paths: string[] } | null> {
    return this.patches.undoPatch();
  }

  /**
   * Settles one file of the patch applied by tool call `itemId` (`path` as in its FileDiff; a move
   * covers both its paths): accepted keeps it; rejected restores the content from before that
   * patch, refused when the file changed since. Throws a SparkError.
   */
  resolvePatchFile(itemId: string, path: string, resolution: PatchResolution): Promise<void> {
    return this.patches.resolvePatchFile(itemId, path, resolution);
  }

  /**
   * Goes back to just before the turn started by user message `itemId` (see ThreadRewind) and tells
   * every face (`thread.rewound`). Refused with `invalid_request` while a turn runs.
   */
  async rewind(itemId: string, restore: RewindRestore): Promise<Rewound> {
    if (this.active) {
      throw new SparkError("invalid_request", "A turn is running; interrupt it or wait before rewinding.", {
        param: "thread_id",
      });
    }
    const rewound = await this.rewinder.rewind(itemId, restore);
    this.log.emit({ type: "thread.rewound", ...rewound });
    return rewound;
  }

  private async runTurns(
    first: QueuedTurn,
    toolChoice: TurnToolChoice | undefined,
    outputSchema: Record<string, unknown> | undefined,
  ): Promise<void> {
    let next: QueuedTurn | undefined = first;
    let choice = toolChoice;
    let schema = outputSchema;
    while (next !== undefined) {
      await this.runTurn(next, choice, schema);
      choice = undefined;
      schema = undefined;
      // A listener of `turn.completed` may have started the next turn: that turn's loop runs the
      // queue after it (two loops would run two turns at once).
      if (this.active) return this.idle;
      next = this.inbox.shift();
    }
  }

  private async runTurn(
    { id, input }: QueuedTurn,
    toolChoice?: TurnToolChoice,
    outputSchema?: Record<string, unknown>,
  ): Promise<void> {
    const turn: ActiveTurn = {
      id,
      controller: new AbortController(),
      stream: null,
      steers: new TurnSteers(),
      closed: false,
      firstTokenAt: null,
      toolChoice,
      ...(outputSchema ? { outputSchema } : {}),
      mode: this.mode,
    };
    this.active = turn;
    if (!this.toolsFixed) {
      this.tools.push(...this.allowed(this.options.moreTools?.() ?? []));
      this.toolsFixed = true;
    }
    const outcome = await this.runner.run(turn, input);
    // Its streams have ended, and with them every successor a steer could start: a steer not
    // delivered by now never will be, whatever its answer says when it comes.
    this.inbox.reportUndelivered(turn, turn.steers.takeUndelivered(), outcome);
    // A tool the interrupt left running in the background asks nothing more of anyone.
    this.approvals.denyTurn(turn.id);
    // Idle before `turn.completed`: a listener may start the next turn.
    this.active = null;
    this.info.updatedAt = new Date().toISOString();
    this.log.emit({ type: "turn.completed", turn_id: turn.id, ...outcome });
  }

  private toolContext(turn: ActiveTurn): ToolContext {
    return {
      workspace: this.options.workspace,
      journal: this.journal,
      signal: turn.controller.signal,
      sandbox: this.sandbox,
      ...(this.options.diagnostics ? { diagnostics: this.options.diagnostics } : {}),
      approve: (request) => this.approvals.request(turn.id, request, turn.controller.signal),
      ...(this.subs
        ? {
            delegate: (task: string, context?: string, agent?: string) =>
              this.subs!.start(task, context, agent),
          }
        : {}),
      ...(this.options.skills ? { skills: this.options.skills } : {}),
    };
  }

  /** The tools the next request lists (the extra ones as they are now, before the first turn). */
  private offeredTools(): Tool[] {
    return this.toolsFixed ? this.tools : [...this.tools, ...this.allowed(this.options.moreTools?.() ?? [])];
  }

  // biome-ignore lint/suspicious/noExplicitAny: a registry holds tools of every argument type
  private allowed(tools: Tool<any>[]): Tool<any>[] {
    const names = this.options.allowedTools;
    return names ? tools.filter((tool) => names.includes(tool.name)) : tools;
  }

  private requestSettings() {
    return requestSettings({
      model: this.options.model ?? "",
      instructions: this.options.instructions,
      // Before the first turn (pre-warm, drafts) with the extra tools ready now, as that turn will likely send.
      tools: this.offeredTools(),
      temperature: this.options.temperature,
      maxOutputTokens:
        this.options.maxOutputTokens ?? defaultMaxOutputTokens(this.options.contextBudget ?? 128_000),
      textFormat: this.options.textFormat,
    });
  }
}
