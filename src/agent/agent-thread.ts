import { randomUUID } from "node:crypto";
import type { DraftAnswer, ResponseStream, ResponsesClient } from "../client/responses-client.js";
import type {
  PatchResolution,
  SubAgentInfo,
  ThreadEvent,
  ThreadInfo,
  ThreadItem,
  TurnStats,
  TurnStatus,
} from "../protocol/agent.js";
import { SparkError } from "../protocol/errors.js";
import type { ResponseObject } from "../protocol/responses.js";
import type { ApprovalPolicy } from "./approval.js";
import { approvalFor } from "./approval.js";
import { type ConversationInput, compactHistory, historyFromItems } from "./conversation-history.js";
import { EditJournal } from "./edit-journal.js";
import { CommandSandbox } from "./sandbox/command-sandbox.js";
import { type DelegateOptions, SubAgents } from "./sub-agents.js";
import { asksToRunCommands } from "./system-prompt.js";
import { toolsFor } from "./tools/index.js";
import type { ApprovalRequest, Tool, ToolContext } from "./tools/tool.js";
import { runTool } from "./tools/tool.js";
import { ToolError } from "./tools/tool-error.js";
import type { Workspace } from "./workspace.js";

export interface AgentThreadOptions {
  client: ResponsesClient;
  workspace: Workspace;
  /** The system prompt (see buildSystemPrompt). */
  instructions: string;
  /** Model id sent with each request. Default: "" (the server's default). */
  model?: string;
  /**
   * Let the model run commands on every turn, not only when the person asks for one. The shell tool
   * is listed either way (the prompt prefix never changes); this decides whether a call is refused.
   * Default: false.
   */
  allowShell?: boolean;
  /**
   * Let the model run commands in a turn whose input (or a steer of it) asks for them. Default:
   * true. False where turn input is not the person's own words (a sub-agent's task is written by a
   * model).
   */
  shellWhenAsked?: boolean;
  /** Whether commands need the user's approval. Default: "ask". */
  approvalPolicy?: ApprovalPolicy;
  /** Where approved commands run. Default: a `workspace-write` sandbox. */
  sandbox?: CommandSandbox;
  /** Token budget of the conversation; past 80% of it old turns are compacted. Default: 128K. */
  contextBudget?: number;
  /** Sampling temperature. Default: the server's. */
  temperature?: number;
  /** Offer the `delegate` tool: background sub-agents on this model (tier). Default: none. */
  delegate?: DelegateOptions;
  /** Items of a saved session to continue. */
  resume?: { thread: ThreadInfo; items: ThreadItem[] };
  /** Turns waiting behind the running one (`enqueue`); beyond it `limit_reached`. Default: 32. */
  maxQueuedTurns?: number;
  /** UTF-8 bytes of the inputs waiting behind the running turn; beyond it `limit_reached`. Default: 4 MiB. */
  maxQueuedBytes?: number;
}

type Listener = (event: ThreadEvent) => void;

interface ActiveTurn {
  id: string;
  controller: AbortController;
  stream: ResponseStream | null;
  /** Steering input that arrived while tools ran; it joins the next request. */
  steers: string[];
  /** The person asked for commands in this turn (or allowed them always); else shell refuses. */
  mayRunCommands: boolean;
  firstTokenAt: number | null;
}

/**
 * One conversation with the coding agent. It talks to a model only through the Responses client,
 * runs tools on the workspace, and narrates everything as thread events (the terminal UI, the agent
 * host and `spark exec` all listen to the same events). It knows nothing of any UI.
 */
export class AgentThread {
  readonly info: ThreadInfo;
  readonly journal = new EditJournal();
  private readonly listeners = new Set<Listener>();
  private readonly items: ThreadItem[] = [];
  private readonly queue: string[] = [];
  private readonly approvals = new Map<string, (approved: boolean) => void>();
  private lastResponseId: string | null = null;
  private lastInputTokens = 0;
  /** Tool calls the chain still owes outputs for (after an interrupt). */
  private owedOutputs: ConversationInput[] = [];
  /** The conversation to resend when the chain must start over (resume, compaction). */
  private restart: ConversationInput[] | null = null;
  private active: ActiveTurn | null = null;
  private idle: Promise<void> = Promise.resolve();
  private readonly subs: SubAgents | null;
  private readonly sandbox: CommandSandbox;
  /** Inputs this thread wrote itself (sub-agent results) and queued: never a request for commands. */
  private readonly ownInputs = new Set<string>();
  /** The tools listed with every request: the same on every turn, part of the cached prefix. */
  private readonly tools: Tool[];

  constructor(private readonly options: AgentThreadOptions) {
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
    if (options.resume) {
      this.items.push(...options.resume.items);
      this.restart = historyFromItems(options.resume.items);
    }
    const { delegate, resume: _, ...inherited } = options;
    this.subs = delegate
      ? new SubAgents(
          (model, client, shell) =>
            new AgentThread({
              ...inherited,
              client,
              model,
              allowShell: shell,
              shellWhenAsked: false,
              ...(delegate.contextBudget ? { contextBudget: delegate.contextBudget } : {}),
            }),
          delegate,
          (event) => this.emit(event),
          // A result is never refused: the sub-agent cap bounds how many can wait.
          (message) => {
            this.ownInputs.add(message);
            this.queueTurn(message);
          },
        )
      : null;
    this.tools = toolsFor({ delegate: this.subs !== null });
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
    this.lastResponseId = null;
    this.owedOutputs = [];
    this.restart = historyFromItems(this.items);
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
  on(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get busy(): boolean {
    return this.active !== null;
  }

  get history(): readonly ThreadItem[] {
    return this.items;
  }

  /**
   * Evaluates the system prompt and tool definitions into the server's state (`generate: false`),
   * so the first question starts decoding at once.
   */
  async prewarm(): Promise<void> {
    const stream = this.options.client.create({
      ...this.requestSettings(),
      input: this.restart ?? [],
      generate: false,
    });
    // Pre-warm produces no output; draining the events just waits for the state to be ready.
    for await (const event of stream) void event;
    const response = await stream.final;
    this.lastResponseId = response.id;
    this.restart = null;
  }

  /** Enter: starts a turn when idle; while a turn runs, steers it. */
  submit(input: string): void {
    if (this.active) this.steer(input);
    else this.startTurn(input);
  }

  /** Turns waiting behind the running one. */
  get queuedTurns(): number {
    return this.queue.length;
  }

  /**
   * Tab: runs `input` as the next turn once the current one ends. Throws `limit_reached` when
   * the queue holds `maxQueuedTurns` turns or `maxQueuedBytes` bytes already; nothing is dropped.
   */
  enqueue(input: string): void {
    const maxTurns = this.options.maxQueuedTurns ?? 32;
    const maxBytes = this.options.maxQueuedBytes ?? 4 * 1024 * 1024;
    if (this.active && this.queue.length >= maxTurns) {
      throw new SparkError("limit_reached", `${maxTurns} turns are queued already; wait for one to start.`);
    }
    const bytes = this.queue.reduce(
      (sum, queued) => sum + Buffer.byteLength(queued),
      Buffer.byteLength(input),
    );
    if (this.active && bytes > maxBytes) {
      throw new SparkError(
        "limit_reached",
        `Queued inputs would take ${bytes} bytes, over the ${maxBytes}-byte limit; wait for a turn to start.`,
      );
    }
    this.queueTurn(input);
  }

  private queueTurn(input: string): void {
    if (!this.active) {
      this.startTurn(input);
      return;
    }
    this.queue.push(input);
    this.emit({ type: "turn.queued", input });
  }

  /** Starts a turn and resolves when it (and anything queued behind it) has finished. */
  startTurn(input: string): Promise<void> {
    if (this.active)
      throw new SparkError(
        "response_in_progress",
        "A turn is already running; steer it or queue the message.",
      );
    this.idle = this.runTurns(input);
    return this.idle;
  }

  /** Resolves when no turn is running. */
  whenIdle(): Promise<void> {
    return this.idle;
  }

  /** Redirects the running turn: the model continues from where it is, with `input` added. */
  steer(input: string): void {
    const turn = this.active;
    if (!turn) {
      this.startTurn(input);
      return;
    }
    this.emit({ type: "turn.steered", turn_id: turn.id, input });
    this.recordUserMessage(turn.id, input);
    // A steer is the person's own words: asking for a command there counts for the rest of the turn.
    if (this.asksForCommands(input)) turn.mayRunCommands = true;
    if (turn.stream) {
      void this.options.client.steer(turn.stream, input).then((outcome) => {
        if (outcome.status !== "accepted") turn.steers.push(input);
      });
    } else turn.steers.push(input);
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
    const restart = this.restart;
    return this.options.client.draft({
      model,
      instructions,
      tools,
      input: [...(restart ?? []), ...this.owedOutputs],
      ...(restart || !this.lastResponseId ? {} : { previous_response_id: this.lastResponseId }),
      draft: text,
    });
  }

  /** Esc: stops the running turn at once. Pending tool calls are answered as aborted. */
  interrupt(): void {
    const turn = this.active;
    if (!turn) return;
    this.queue.length = 0;
    turn.controller.abort();
    turn.stream?.cancel();
    // Denied and forgotten: a late answer finds nothing, and faces clear the prompt.
    for (const approvalId of [...this.approvals.keys()]) this.resolveApproval(approvalId, false);
  }

  /**
   * Answers a pending approval of this thread or of one of its sub-agents; false when none by that
   * id is pending (already answered, or its turn was interrupted).
   */
  respondToApproval(approvalId: string, approved: boolean): boolean {
    if (this.approvals.has(approvalId)) {
      this.resolveApproval(approvalId, approved);
      return true;
    }
    return this.subs?.respondToApproval(approvalId, approved) ?? false;
  }

  private resolveApproval(approvalId: string, approved: boolean): void {
    const resolve = this.approvals.get(approvalId)!;
    this.approvals.delete(approvalId);
    this.emit({ type: "approval.resolved", approval_id: approvalId, approved });
    resolve(approved);
  }

  /** Reverts the last applied patch byte for byte; returns the files it restored. */
  async undo(): Promise<string[]> {
    return (await this.undoPatch())?.paths ?? [];
  }

  /**
   * Reverts the last applied patch byte for byte: the tool call that applied it (null if unknown)
   * and the files restored, relative to the workspace; null when there is nothing to undo.
   */
  async undoPatch(): Promise<{ itemId: string | null; paths: string[] } | null> {
    if (!this.journal.canUndo) return null;
    const { id, paths } = await this.journal.undo().catch((error: unknown) => {
      throw patchError(error, null);
    });
    return { itemId: id ?? null, paths: paths.map((p) => this.options.workspace.relative(p)) };
  }

  /**
   * Settles one file of the patch applied by tool call `itemId` (`path` as in its FileDiff; a move
   * covers both its paths): accepted keeps it; rejected restores the content from before that
   * patch, refused when the file changed since. Throws a SparkError.
   */
  async resolvePatchFile(itemId: string, path: string, resolution: PatchResolution): Promise<void> {
    const item = this.items.find((candidate) => candidate.type === "tool_call" && candidate.id === itemId);
    const display = item?.type === "tool_call" ? item.display : undefined;
    const diff = display?.kind === "diff" ? display.files.find((file) => file.path === path) : undefined;
    if (!diff) {
      throw new SparkError("not_found", `No patch of ${path} by ${itemId} in this thread.`, {
        param: "path",
      });
    }
    try {
      const paths = await Promise.all(
        [diff.path, ...(diff.from === undefined ? [] : [diff.from])].map((p) =>
          this.options.workspace.resolve(p),
        ),
      );
      if (resolution === "accepted") this.journal.accept(itemId, paths);
      else await this.journal.revert(itemId, paths);
    } catch (error) {
      throw patchError(error, "path");
    }
  }

  private async runTurns(first: string): Promise<void> {
    let input: string | undefined = first;
    while (input !== undefined) {
      await this.runTurn(input);
      input = this.queue.shift();
    }
  }

  private async runTurn(input: string): Promise<TurnStatus> {
    // A sub-agent's result is a message this thread wrote: never a request for commands.
    const ownWords = !this.ownInputs.delete(input);
    const turn: ActiveTurn = {
      id: `turn_${randomUUID().replaceAll("-", "").slice(0, 16)}`,
      controller: new AbortController(),
      stream: null,
      steers: [],
      mayRunCommands: this.options.allowShell === true || (ownWords && this.asksForCommands(input)),
      firstTokenAt: null,
    };
    this.active = turn;
    const started = performance.now();
    const stats: TurnStats = {
      timeToFirstTokenMs: null,
      tokensPerSecond: null,
      inputTokens: 0,
      cachedInputTokens: 0,
      outputTokens: 0,
    };
    let decodeMs = 0;
    this.emit({ type: "turn.started", turn_id: turn.id, input });
    if (this.info.title === "New session")
      this.info.title = input.trim().split("\n")[0]!.slice(0, 60) || "New session";
    this.recordUserMessage(turn.id, input);

    let next: ConversationInput[] = [...this.owedOutputs, { role: "user", content: input }];
    this.owedOutputs = [];
    let status: TurnStatus = "completed";
    let error: SparkError | undefined;
    try {
      for (;;) {
        if (this.lastInputTokens > (this.options.contextBudget ?? 128_000) * 0.8) this.compact();
        const { response, calls } = await this.stream(turn, next);
        stats.inputTokens += response.usage?.input_tokens ?? 0;
        stats.cachedInputTokens += response.usage?.input_tokens_details.cached_tokens ?? 0;
        stats.outputTokens += response.usage?.output_tokens ?? 0;
        this.lastInputTokens = (response.usage?.input_tokens ?? 0) + (response.usage?.output_tokens ?? 0);
        if (response.timing && response.usage && response.timing.tokens_per_second > 0) {
          decodeMs += ((response.usage.output_tokens - 1) * 1000) / response.timing.tokens_per_second;
        }
        if (turn.controller.signal.aborted) {
          this.owedOutputs = calls.map((call) => ({
            type: "function_call_output",
            call_id: call.call_id,
            output: "Aborted: the user interrupted.",
          }));
          status = "interrupted";
          break;
        }
        if (calls.length === 0 && turn.steers.length === 0) break;
        next = [];
        for (const call of calls) next.push(await this.runCall(turn, call));
        if (turn.controller.signal.aborted) {
          status = "interrupted";
          this.owedOutputs = next;
          break;
        }
        next.push(...turn.steers.splice(0).map((text) => ({ role: "user" as const, content: text })));
      }
    } catch (caught) {
      if (turn.controller.signal.aborted) status = "interrupted";
      else {
        status = "failed";
        error = SparkError.from(caught);
      }
    }
    if (turn.firstTokenAt !== null) stats.timeToFirstTokenMs = turn.firstTokenAt - started;
    if (decodeMs > 0) stats.tokensPerSecond = (stats.outputTokens * 1000) / decodeMs;
    this.active = null;
    this.info.updatedAt = new Date().toISOString();
    this.emit({
      type: "turn.completed",
      turn_id: turn.id,
      status,
      stats,
      ...(error ? { error: error.toWire() } : {}),
    });
    return status;
  }

  /** One model response (following any steered successors), narrated as an agent_message item. */
  private async stream(
    turn: ActiveTurn,
    input: ConversationInput[],
  ): Promise<{ response: ResponseObject; calls: FunctionCall[] }> {
    const restart = this.restart;
    this.restart = null;
    const stream = this.options.client.create(
      {
        ...this.requestSettings(),
        input: restart ? [...restart, ...input] : input,
        ...(restart || !this.lastResponseId ? {} : { previous_response_id: this.lastResponseId }),
      },
      { signal: turn.controller.signal },
    );
    turn.stream = stream;
    let message: { id: string; text: string } | null = null;
    const calls: FunctionCall[] = [];
    try {
      for await (const event of stream) {
        if (event.type === "response.output_text.delta") {
          turn.firstTokenAt ??= performance.now();
          if (!message) {
            message = { id: `item_${randomUUID().slice(0, 8)}`, text: "" };
            this.emit({
              type: "item.started",
              turn_id: turn.id,
              item: { type: "agent_message", id: message.id, text: "" },
            });
          }
          message.text += event.delta;
          this.emit({ type: "item.delta", turn_id: turn.id, item_id: message.id, delta: event.delta });
        } else if (event.type === "response.output_item.done" && event.item.type === "function_call") {
          calls.push(event.item);
        } else if (event.type === "response.created" && message) {
          // A steered successor begins: what was said so far is one finished message.
          this.completeItem(turn.id, { type: "agent_message", id: message.id, text: message.text });
          message = null;
        }
      }
    } finally {
      turn.stream = null;
      if (message) this.completeItem(turn.id, { type: "agent_message", id: message.id, text: message.text });
    }
    const response = await stream.final;
    this.lastResponseId = response.id;
    return { response, calls };
  }

  private async runCall(turn: ActiveTurn, call: FunctionCall): Promise<ConversationInput> {
    const item: Extract<ThreadItem, { type: "tool_call" }> = {
      type: "tool_call",
      id: call.call_id,
      name: call.name,
      arguments: call.arguments,
      status: "running",
    };
    this.emit({ type: "item.started", turn_id: turn.id, item: { ...item } });
    const tool = this.tools.find((candidate) => candidate.name === call.name);
    const newestEdit = this.journal.newest;
    const result = tool
      ? await runTool(tool, call.arguments, this.toolContext(turn))
      : {
          output: `Unknown tool '${call.name}'. Available: ${this.tools.map((t) => t.name).join(", ")}.`,
          isError: true,
        };
    // Name the edit this call recorded after it, so each file can be accepted or rejected later.
    const edit = this.journal.newest;
    if (edit && edit !== newestEdit) edit.id ??= call.call_id;
    this.completeItem(turn.id, {
      ...item,
      status: result.isError ? "failed" : "completed",
      output: result.output,
      ...("display" in result && result.display ? { display: result.display } : {}),
    });
    return { type: "function_call_output", call_id: call.call_id, output: result.output };
  }

  private toolContext(turn: ActiveTurn): ToolContext {
    return {
      workspace: this.options.workspace,
      journal: this.journal,
      signal: turn.controller.signal,
      sandbox: this.sandbox,
      mayRunCommands: turn.mayRunCommands,
      approve: (request) => this.approve(turn, request),
      // A sub-agent may run commands only when this turn may: its task is the model's words, not the person's.
      ...(this.subs
        ? {
            delegate: (task: string, context?: string) =>
              this.subs!.start(task, context, { shell: turn.mayRunCommands }),
          }
        : {}),
    };
  }

  private approve(turn: ActiveTurn, request: ApprovalRequest): Promise<boolean> {
    const decision = approvalFor(request, this.options.approvalPolicy ?? "ask");
    if (decision !== "ask-user") return Promise.resolve(decision === "auto-approve");
    const approvalId = `appr_${randomUUID().slice(0, 8)}`;
    return new Promise((resolve) => {
      this.approvals.set(approvalId, resolve);
      this.emit({ type: "approval.requested", turn_id: turn.id, approval_id: approvalId, ...request });
    });
  }

  /** Whether `input`, the person's own words, asks for commands this thread may run when asked. */
  private asksForCommands(input: string): boolean {
    return this.options.shellWhenAsked !== false && asksToRunCommands(input);
  }

  /**
   * What every request repeats: byte-identical from turn to turn, so the server's cached prefix
   * (instructions, then tools) stays valid. Only `/model` (a new chain on another model) changes it.
   */
  private requestSettings() {
    return {
      model: this.options.model ?? "",
      instructions: this.options.instructions,
      tools: this.tools.map((tool) => ({
        type: "function" as const,
        name: tool.name,
        description: tool.description,
        parameters: tool.parameters,
        strict: false,
      })),
      store: true,
      ...(this.options.temperature === undefined ? {} : { temperature: this.options.temperature }),
    };
  }

  /** Starts a new chain whose input is a compacted copy of the conversation. */
  private compact(): void {
    this.restart = compactHistory(this.items);
    this.lastResponseId = null;
    const notice = "Older turns were compacted to fit the context window.";
    this.completeItem(this.active?.id ?? "", {
      type: "notice",
      id: `item_${randomUUID().slice(0, 8)}`,
      text: notice,
    });
  }

  private recordUserMessage(turnId: string, text: string): void {
    const item: ThreadItem = { type: "user_message", id: `item_${randomUUID().slice(0, 8)}`, text };
    this.emit({ type: "item.started", turn_id: turnId, item });
    this.completeItem(turnId, item);
  }

  private completeItem(turnId: string, item: ThreadItem): void {
    this.items.push(item);
    this.emit({ type: "item.completed", turn_id: turnId, item });
  }

  private emit(event: ThreadEvent): void {
    for (const listener of this.listeners) listener(event);
  }
}

/** A journal's ToolError as the SparkError a client gets (409 when the files are in the way). */
function patchError(error: unknown, param: string | null): unknown {
  if (!(error instanceof ToolError)) return error;
  const conflict = error.code === "patch_rejected" || error.code === "not_allowed";
  return new SparkError(error.code === "not_found" ? "not_found" : "invalid_request", error.message, {
    param,
    ...(conflict ? { status: 409 } : {}),
    cause: error,
  });
}

interface FunctionCall {
  call_id: string;
  name: string;
  arguments: string;
}
