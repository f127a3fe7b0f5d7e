import {
  type AgentContext,
  RequestError,
  type SessionConfigOption,
  type SessionUpdate,
  type StopReason,
  type ToolCallContent,
} from "@agentclientprotocol/sdk";
import type { HostClient } from "../../client-core/host-client.js";
import { IncrementalPatchPreview } from "../../client-core/incremental-patch-preview.js";
import { parseReviewArgs, threadReviewText } from "../../client-core/review-text.js";
import type { StampedEvent } from "../../client-core/thread-view.js";
import type { AgentMode, ThreadInfo, ThreadItem, TurnStatus } from "../../protocol/agent.js";
import type { WireError } from "../../protocol/errors.js";
import { asRequestError } from "./acp-errors.js";
import { allowed, PERMISSION_OPTIONS, permissionToolCall } from "./acp-permissions.js";
import { planEntries } from "./acp-plan.js";
import { ACP_COMMANDS, type AcpCommand, configOptions, MODES } from "./acp-session-config.js";
import {
  argumentsValue,
  finishedContent,
  patchLocations,
  patchPreviewContent,
  patchTitle,
  toolKind,
  toolLocations,
  toolTitle,
} from "./acp-tool-calls.js";

type ToolCallItem = Extract<ThreadItem, { type: "tool_call" }>;

/** How a prompt's turn ended: as the host reported it, or unknown (the connection to the host was lost). */
type PromptEnd = { status: TurnStatus; error?: WireError } | { lost: true };

interface RunningPrompt {
  /** The prompt's turn, as the host's ack of `turn.queue` named it; null until the ack. */
  turnId: string | null;
  /** Its `turn.started` arrived (until then it waits behind another face's turns). */
  started: boolean;
  done: (end: PromptEnd) => void;
}

/**
 * One ACP session: an agent-host thread, followed through the client core's HostClient. The
 * thread's events become `session/update` notifications (every turn's, whichever face started it),
 * approvals become `session/request_permission`, and a prompt is a turn.
 */
export class AcpSession {
  /** Tool calls and messages seen, by item id: deltas extend them. */
  private readonly items = new Map<string, ThreadItem>();
  /** What the last streaming update of each call showed (its title), to send only changes. */
  private readonly shown = new Map<string, string>();
  /** The preview of each `apply_patch` call being written, extended delta by delta. */
  private readonly previews = new Map<string, IncrementalPatchPreview>();
  /** Open permission requests by approval id: aborting one withdraws it from the client. */
  private readonly permissions = new Map<string, AbortController>();
  /** Notifications go out one after another, in event order; a prompt answers after them. */
  private sending: Promise<void> = Promise.resolve();
  private running: RunningPrompt | null = null;
  /** Plan-mode turns by id, with their latest answer: its list becomes a `plan` update at the end. */
  private readonly planTurns = new Map<string, string>();
  /** Turns whose prompt (first user message) was seen, until they end. */
  private readonly prompted = new Set<string>();
  /** What `_spark/steer` sent and the thread has not shown yet (as its user message). */
  private readonly steers: string[] = [];
  /** The message item the last message chunk belonged to (null after a user message). */
  private lastMessage: string | null = null;
  /** The reasoning item the last thought chunk belonged to. */
  private lastThought: string | null = null;
  /** A turn runs on the thread (this client's or another face's). */
  private turnActive = false;
  /** While a `session/resume` replays the thread: its history is not sent again. */
  private quietHistory = false;
  /** While a released session follows its thread again: the replay was sent before. */
  private quiet = false;
  /**
   * Events that came while a prompt waited for the host to name its turn: handled once it did,
   * so each is matched against the prompt's own turn id, whatever order they came in.
   */
  private held: StampedEvent[] | null = null;
  /** Let go to make room for other sessions (see {@link release}); followed again on its next use. */
  private released = false;
  /** `/review`s run so far, naming each one's tool call. */
  private reviews = 0;
  private attaching: Promise<void> | null = null;
  /** When the session was last used by the client (ms since the epoch): the least recent goes first. */
  lastUsed = Date.now();
  private readonly off: (() => void)[];

  constructor(
    private readonly client: HostClient,
    private readonly editor: AgentContext,
    private info: ThreadInfo,
    /** The workspace root, to make the tools' relative paths absolute. */
    private readonly root: string,
    private readonly log: (line: string) => void,
  ) {
    this.off = [
      client.on("event", (event) => {
        if (event.thread_id !== this.info.id) return;
        if (this.held) this.held.push(event);
        else this.onEvent(event);
      }),
      // A host that restarts or stops (an attached spark serve) never reports the turn's end: the
      // prompt ends at once. The session keeps following the thread, resumed when the host is back.
      client.on("status", (status) => {
        if (status !== "open") this.running?.done({ lost: true });
      }),
    ];
  }

  get id(): string {
    return this.info.id;
  }

  get mode(): AgentMode {
    return this.info.mode ?? "default";
  }

  /** Follows the thread from its start; with `replay`, its history reaches the client first. */
  async resume(replay: boolean): Promise<void> {
    this.quietHistory = !replay;
    try {
      this.info = await this.client.resumeThread(this.info.id);
    } finally {
      this.quietHistory = false;
    }
    await this.sending;
  }

  /**
   * Nothing would be lost by letting the session go: no prompt, turn or permission request of it
   * runs, so no update is due.
   */
  get idle(): boolean {
    return this.following && this.running === null && !this.turnActive && this.permissions.size === 0;
  }

  /** The session follows its thread in the host (not released or closed). */
  get following(): boolean {
    return !this.released;
  }

  /**
   * The thread has a user message, so the host keeps its transcript: once released, it can be
   * followed again. A thread never used is not kept once the host lets it go.
   */
  get kept(): boolean {
    return [...this.items.values()].some((item) => item.type === "user_message");
  }

  /**
   * Stops following the thread in the host (which may then let it go) while keeping the session:
   * its next use follows the thread again, without sending what the client has seen.
   */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.client.forget(this.id);
  }

  /**
   * Follows the thread again after {@link release} (the caller makes room for it in the host
   * first); what the host replays was sent to the client before and is not sent again.
   */
  attach(): Promise<void> {
    if (!this.released) return Promise.resolve();
    this.attaching ??= (async () => {
      this.quiet = true;
      try {
        this.info = await this.client.resumeThread(this.info.id);
        this.released = false;
      } finally {
        this.quiet = false;
        this.attaching = null;
      }
    })();
    return this.attaching;
  }

  /**
   * Runs one turn of `input` (after the turns of other faces running or queued before it);
   * resolves when it ends, after every update of it went out.
   */
  async prompt(input: string): Promise<StopReason> {
    if (this.running)
      throw RequestError.invalidRequest(
        { sessionId: this.id },
        "A prompt of this session is running: cancel it, or steer it with _spark/steer.",
      );
    const running: RunningPrompt = { turnId: null, started: false, done: () => {} };
    const ended = new Promise<PromptEnd>((resolve) => {
      running.done = resolve;
    });
    this.running = running;
    try {
      this.held = [];
      try {
        // Queued, not started: a turn of another face running now goes first instead of refusing it.
        const ack = await this.client.request({ type: "turn.queue", thread_id: this.id, input });
        running.turnId = ack.turn_id ?? null;
      } finally {
        const held = this.held ?? [];
        this.held = null;
        for (const event of held) this.onEvent(event);
      }
      if (running.turnId === null)
        throw RequestError.internalError(
          undefined,
          "Spark's agent host did not name the prompt's turn: it is older than this spark acp. Restart spark serve.",
        );
      const end = await ended;
      await this.sending;
      if ("lost" in end)
        throw RequestError.internalError(
          { code: "disconnected" },
          "The connection to Spark's agent host was lost during the turn (spark serve stopped or restarted): how the turn ended is unknown. Send the prompt again once it is back.",
        );
      const { status, error } = end;
      switch (status) {
        case "completed":
          return "end_turn";
        case "interrupted":
          return "cancelled";
        case "failed":
          if (error?.code === "limit_reached") return "max_turn_requests";
          throw asRequestError(error ?? new Error("The turn failed."));
        default: {
          const unknown: never = status;
          throw RequestError.internalError(undefined, `Unknown turn status ${String(unknown)}`);
        }
      }
    } catch (error) {
      throw asRequestError(error);
    } finally {
      this.running = null;
    }
  }

  /** `session/cancel`: interrupts the running turn; its prompt resolves `cancelled`. */
  cancel(): void {
    // The questions are withdrawn from the client; the interrupt denies them in the host.
    for (const abort of this.permissions.values()) abort.abort();
    this.permissions.clear();
    if (!this.running) return;
    this.client.request({ type: "turn.interrupt", thread_id: this.id }).catch((error: unknown) => {
      this.log(`Interrupting ${this.id} failed: ${String(error)}`);
    });
  }

  /** `_spark/steer`: adds `input` to the running turn. */
  async steer(input: string): Promise<void> {
    if (!this.turnActive)
      throw RequestError.invalidRequest(
        { sessionId: this.id },
        "No turn is running to steer: send a prompt.",
      );
    this.steers.push(input);
    await this.client.request({ type: "turn.steer", thread_id: this.id, input }).catch((error: unknown) => {
      this.steers.splice(this.steers.indexOf(input), 1);
      throw asRequestError(error);
    });
  }

  async setMode(mode: AgentMode): Promise<void> {
    await this.client
      .request({ type: "thread.set_mode", thread_id: this.id, mode })
      .catch((error: unknown) => {
        throw asRequestError(error);
      });
    if (mode === this.mode) return;
    this.info = { ...this.info, mode };
    this.send({ sessionUpdate: "current_mode_update", currentModeId: mode });
    this.send({ sessionUpdate: "config_option_update", configOptions: this.configOptions });
  }

  /** Sends the following turns to `model`, one the agent host offers (its `thread.renamed` tells the client). */
  async setModel(model: string): Promise<void> {
    await this.client
      .request({ type: "thread.set_model", thread_id: this.id, model })
      .catch((error: unknown) => {
        throw asRequestError(error);
      });
  }

  /** The session's config options (mode and model), as they stand. */
  get configOptions(): SessionConfigOption[] {
    return configOptions(this.info, this.client.models);
  }

  /**
   * Shows the thread's events that came before this session followed it: a new thread's
   * `thread.history`, the notices of its start (the editor's MCP servers left out, or failed).
   */
  catchUp(events: readonly StampedEvent[]): void {
    for (const event of events) this.onEvent(event);
  }

  /** Tells the person something of the session's own (not the thread's), as a notice is shown. */
  notice(message: string): void {
    this.message(`_${message}_`, "acp_notice");
  }

  /** Tells the client the slash commands it may offer (`available_commands_update`). */
  advertiseCommands(): void {
    this.send({ sessionUpdate: "available_commands_update", availableCommands: ACP_COMMANDS });
  }

  /**
   * Runs one of the session's slash commands and answers it as the agent's message (what it did,
   * or why not); the model is not asked. Resolves once the answer went out.
   */
  async runCommand(command: AcpCommand): Promise<StopReason> {
    if (this.running)
      throw RequestError.invalidRequest(
        { sessionId: this.id },
        "A prompt of this session is running: wait for it, or cancel it.",
      );
    const answer = await this.commandAnswer(command).catch((error: unknown) => asRequestError(error).message);
    if (answer) this.send({ sessionUpdate: "agent_message_chunk", content: text(answer) });
    this.lastMessage = null;
    await this.sending;
    return "end_turn";
  }

  private async commandAnswer(command: AcpCommand): Promise<string> {
    switch (command.name) {
      case "mode":
        if (!command.mode)
          return command.arg
            ? `Unknown mode ${command.arg}: one of ${MODES.map((m) => m.id).join(", ")}.`
            : `Mode: ${this.mode}. Switch with /mode default or /mode plan.`;
        await this.setMode(command.mode);
        return `Mode: ${command.mode}.`;
      case "model": {
        const models = this.client.models;
        const others = models.length > 1 ? ` Available: ${models.join(", ")}.` : "";
        if (!command.model) return `Model: ${this.info.model}.${others}`;
        if (command.model === this.info.model) return `Already using ${command.model}.`;
        await this.setModel(command.model);
        return `Model: ${command.model}, from the next turn.`;
      }
      case "undo":
        await this.client.request({ type: "thread.undo", thread_id: this.id });
        return "Reverted the last patch.";
      case "compact":
        // The thread's notice says what it freed (or that there was nothing to compact yet).
        await this.client.request({
          type: "thread.compact",
          thread_id: this.id,
          ...(command.focus ? { focus: command.focus } : {}),
        });
        return "";
      case "review":
        return this.review(command.args);
      default: {
        const unknown: never = command;
        throw new Error(`Unknown command ${JSON.stringify(unknown)}`);
      }
    }
  }

  /**
   * `/review ARGS`: the host's read-only review of the session's workspace (`thread.review`), shown
   * as a read tool call whose title follows its steps; the findings are the agent's message.
   */
  private async review(args: string): Promise<string> {
    const target = parseReviewArgs(args);
    const toolCallId = `review_${++this.reviews}`;
    const title = "Review (read-only)";
    this.send({ sessionUpdate: "tool_call", toolCallId, title, kind: "read", status: "in_progress" });
    try {
      const review = await this.client.review(this.id, target, (step) =>
        this.send({ sessionUpdate: "tool_call_update", toolCallId, title: `${title}: ${step}` }),
      );
      this.send({ sessionUpdate: "tool_call_update", toolCallId, title, status: "completed" });
      return threadReviewText(review);
    } catch (error) {
      this.send({ sessionUpdate: "tool_call_update", toolCallId, title, status: "failed" });
      throw error;
    }
  }

  /** Stops following the thread (it goes on in the host); a running turn is interrupted. */
  close(): void {
    this.cancel();
    for (const off of this.off) off();
    if (!this.released) this.client.forget(this.id);
    this.released = true;
  }

  private onEvent(event: StampedEvent): void {
    if (this.quiet) {
      this.follow(event);
      return;
    }
    switch (event.type) {
      case "thread.started":
      case "thread.renamed": {
        const before = this.info;
        this.info = { ...event.thread };
        if (event.type !== "thread.renamed") return;
        if (event.thread.title !== before.title)
          this.send({ sessionUpdate: "session_info_update", title: event.thread.title });
        if (this.mode !== (before.mode ?? "default"))
          this.send({ sessionUpdate: "current_mode_update", currentModeId: this.mode });
        if (event.thread.model !== before.model || this.mode !== (before.mode ?? "default"))
          this.send({ sessionUpdate: "config_option_update", configOptions: this.configOptions });
        return;
      }
      case "thread.history":
        this.items.clear();
        for (const item of event.items) this.items.set(item.id, item);
        if (!this.quietHistory) for (const item of event.items) this.replay(item);
        return;
      case "turn.started":
        this.turnActive = true;
        if (this.running?.turnId === event.turn_id) this.running.started = true;
        return;
      case "item.started":
        // A copy: deltas extend it.
        this.items.set(event.item.id, { ...event.item });
        if (event.item.type === "tool_call") {
          this.shown.set(event.item.id, toolTitle(event.item.name, event.item.arguments));
          if (event.item.name === "apply_patch")
            this.previews.set(event.item.id, new IncrementalPatchPreview());
          this.send(this.toolCall(event.item, "pending"));
        } else if (event.item.type === "agent_message" && event.item.text)
          this.message(event.item.text, event.item.id);
        else if (event.item.type === "reasoning" && event.item.text)
          this.thought(event.item.text, event.item.id);
        return;
      case "item.delta":
        this.onDelta(event.item_id, event.delta);
        return;
      case "item.completed":
        this.onCompleted(event.item, event.turn_id);
        return;
      case "approval.requested":
        this.ask(event);
        return;
      case "approval.resolved":
        // Answered here, from another face, or withdrawn by an interrupt: the question is gone.
        this.permissions.get(event.approval_id)?.abort();
        this.permissions.delete(event.approval_id);
        return;
      case "turn.completed": {
        this.turnActive = false;
        this.prompted.delete(event.turn_id);
        const plan = this.planTurns.get(event.turn_id);
        this.planTurns.delete(event.turn_id);
        const entries = plan ? planEntries(plan) : [];
        if (entries.length > 0) this.send({ sessionUpdate: "plan", entries });
        const running = this.running;
        if (running?.turnId === event.turn_id)
          running.done({ status: event.status, ...(event.error ? { error: event.error } : {}) });
        // An interrupt drops the turns queued behind the running one (the host does the same).
        else if (running?.turnId && !running.started && event.status === "interrupted")
          running.done({ status: "interrupted" });
        return;
      }
      case "context.updated":
        this.send({
          sessionUpdate: "usage_update",
          used: event.context.used_tokens,
          size: event.context.window_tokens,
        });
        return;
      case "turn.queued":
      case "turn.steered":
      // ACP has no rewind: an editor sees the conversation go on from the kept turns.
      case "thread.rewound":
      case "patch.undone":
      case "patch.resolved":
      case "subagent.started":
      case "subagent.progress":
      case "subagent.completed":
        return;
      default: {
        const unknown: never = event;
        this.log(`Ignored an event of type ${String((unknown as { type: unknown }).type)}`);
      }
    }
  }

  private onDelta(itemId: string, delta: string): void {
    const item = this.items.get(itemId);
    if (!item) return;
    if (item.type === "agent_message") {
      item.text += delta;
      this.message(delta, item.id);
    } else if (item.type === "reasoning") {
      item.text += delta;
      this.thought(delta, item.id);
    } else if (item.type === "tool_call") {
      item.arguments += delta;
      const preview = this.previews.get(item.id);
      if (preview) {
        // Only whole new lines change what a client shows; a delta costs what it adds.
        if (!preview.update(item.arguments)) return;
        const content = patchPreviewContent(preview.files, this.root);
        this.send({
          sessionUpdate: "tool_call_update",
          toolCallId: item.id,
          title: patchTitle(preview.files),
          locations: patchLocations(preview.files, this.root),
          ...(content.length > 0 ? { content } : {}),
        });
        return;
      }
      const title = toolTitle(item.name, item.arguments);
      // Deltas that change nothing a client shows (a word still being written) send nothing.
      if (this.shown.get(item.id) === title) return;
      this.shown.set(item.id, title);
      this.send({
        sessionUpdate: "tool_call_update",
        toolCallId: item.id,
        title,
        locations: toolLocations(item.name, item.arguments, this.root),
      });
    }
  }

  /** A released session following its thread again: what it replays was sent before. */
  private follow(event: StampedEvent): void {
    if (event.type === "thread.started" || event.type === "thread.renamed") this.info = { ...event.thread };
    else if (event.type === "thread.history") {
      this.items.clear();
      for (const item of event.items) this.items.set(item.id, item);
    }
  }

  private onCompleted(item: ThreadItem, turnId: string): void {
    const known = this.items.get(item.id);
    this.items.set(item.id, item);
    switch (item.type) {
      case "user_message":
        if (item.mode === "plan") this.planTurns.set(turnId, "");
        this.onUserMessage(item.text, turnId);
        return;
      case "agent_message":
        if (this.planTurns.has(turnId)) this.planTurns.set(turnId, item.text);
        // Streamed already, unless the item arrived whole.
        if (!known) this.message(item.text, item.id);
        return;
      case "reasoning":
        if (!known) this.thought(item.text, item.id);
        return;
      case "tool_call":
        this.shown.delete(item.id);
        this.previews.delete(item.id);
        if (!known) this.send(this.toolCall(item, "pending"));
        this.send({
          sessionUpdate: "tool_call_update",
          toolCallId: item.id,
          status: item.status === "failed" ? "failed" : "completed",
          title: toolTitle(item.name, item.arguments),
          content: finishedContent(item, this.root),
          rawOutput: item.output ?? null,
        });
        return;
      case "notice":
        this.message(`_${item.text}_`, item.id);
        return;
      default: {
        const unknown: never = item;
        this.log(`Ignored an item of type ${String((unknown as { type: unknown }).type)}`);
      }
    }
  }

  /**
   * What this client sent (its prompt, or a steer) is its own and not echoed; a turn or a steer from
   * another face is shown. A steer redirects the answer, which goes on in a new paragraph.
   */
  private onUserMessage(input: string, turnId: string): void {
    // A turn's first user message is its prompt; later ones are steers.
    const steer = this.prompted.has(turnId);
    this.prompted.add(turnId);
    const mine = steer ? this.steers.includes(input) : this.running?.turnId === turnId;
    if (steer && mine) this.steers.splice(this.steers.indexOf(input), 1);
    if (!mine) this.send({ sessionUpdate: "user_message_chunk", content: text(input) });
    this.lastMessage = steer && this.lastMessage !== null ? "" : null;
  }

  /** A saved item, as the updates that would have shown it live. */
  private replay(item: ThreadItem): void {
    switch (item.type) {
      case "user_message":
        this.lastMessage = null;
        this.send({ sessionUpdate: "user_message_chunk", content: text(item.text) });
        return;
      case "agent_message":
        this.message(item.text, item.id);
        return;
      case "reasoning":
        this.thought(item.text, item.id);
        return;
      case "tool_call":
        this.send(
          this.toolCall(item, item.status === "failed" ? "failed" : "completed", {
            content: finishedContent(item, this.root),
            rawOutput: item.output ?? null,
          }),
        );
        return;
      case "notice":
        this.message(`_${item.text}_`, item.id);
        return;
      default: {
        const unknown: never = item;
        this.log(`Ignored an item of type ${String((unknown as { type: unknown }).type)}`);
      }
    }
  }

  private toolCall(
    item: ToolCallItem,
    status: "pending" | "completed" | "failed",
    finished: { content: ToolCallContent[]; rawOutput: string | null } | null = null,
  ): SessionUpdate {
    return {
      ...finished,
      sessionUpdate: "tool_call",
      toolCallId: item.id,
      title: toolTitle(item.name, item.arguments),
      kind: toolKind(item.name),
      status,
      locations: toolLocations(item.name, item.arguments, this.root),
      ...(item.arguments ? { rawInput: argumentsValue(item.arguments) } : {}),
    };
  }

  /**
   * Asks the client, after the updates before it went out. The answer (or a withdrawn question:
   * cancelled, or resolved elsewhere) goes back to the host as Spark's approval; anything but the
   * allow option is a no.
   */
  private ask(approval: Extract<StampedEvent, { type: "approval.requested" }>): void {
    const abort = new AbortController();
    this.permissions.set(approval.approval_id, abort);
    // The call that asks, as the host names it; a sub-agent's calls are not this thread's items.
    const call =
      approval.call_id !== undefined && this.items.get(approval.call_id)?.type === "tool_call"
        ? approval.call_id
        : null;
    this.sending = this.sending.then(() => {
      this.editor
        .request(
          "session/request_permission",
          {
            sessionId: this.id,
            toolCall: permissionToolCall(approval, call ?? approval.approval_id),
            options: PERMISSION_OPTIONS,
          },
          { cancellationSignal: abort.signal, stopWaitingOnCancel: true },
        )
        .then(allowed, () => false)
        .then((approved) => {
          // Withdrawn: the host settled it already.
          if (!this.permissions.delete(approval.approval_id)) return;
          if (approved && call)
            this.send({ sessionUpdate: "tool_call_update", toolCallId: call, status: "in_progress" });
          this.client
            .request({
              type: "approval.respond",
              thread_id: this.id,
              approval_id: approval.approval_id,
              approved,
            })
            .catch((error: unknown) =>
              this.log(`Answering approval ${approval.approval_id} failed: ${String(error)}`),
            );
        });
    });
  }

  /**
   * A chunk of message `itemId`. Clients join an agent's chunks into one message, so the first
   * chunk of another message (after a tool call or a steer) starts a new paragraph.
   */
  private message(chunk: string, itemId: string): void {
    const separate = this.lastMessage !== null && this.lastMessage !== itemId;
    this.lastMessage = itemId;
    this.send({ sessionUpdate: "agent_message_chunk", content: text(separate ? `\n\n${chunk}` : chunk) });
  }

  /** A chunk of reasoning item `itemId`, as a thought; another item's starts a new paragraph. */
  private thought(chunk: string, itemId: string): void {
    const separate = this.lastThought !== null && this.lastThought !== itemId;
    this.lastThought = itemId;
    this.send({ sessionUpdate: "agent_thought_chunk", content: text(separate ? `\n\n${chunk}` : chunk) });
  }

  private send(update: SessionUpdate): void {
    this.sending = this.sending.then(() =>
      this.editor.notify("session/update", { sessionId: this.id, update }).catch((error: unknown) => {
        this.log(`A session/update was not sent: ${String(error)}`);
      }),
    );
  }
}

function text(value: string): { type: "text"; text: string } {
  return { type: "text", text: value };
}
