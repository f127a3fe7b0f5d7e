import * as vscode from "vscode";
import { type HostClient, HostClientError, type ThreadRequest } from "../../src/client-core/host-client.js";
import {
  emptyView,
  type FileState,
  reduceView,
  type StampedEvent,
  type ThreadView,
  type Tone,
  type ViewAction,
} from "../../src/client-core/thread-view.js";
import type { ReviewTarget, RewindRestore, ThreadInfo } from "../../src/protocol/agent.js";
import { DraftPacer } from "../../src/protocol/draft-pacer.js";
import { reviewCommand, reviewOutcome, reviewRoot } from "./core/review-problems.js";
import { ReviewDiagnostics } from "./review-diagnostics.js";
import type { SparkConnection } from "./spark-connection.js";

const LAST_THREAD_KEY = "spark.lastThread";
/** How files reviewed hunk by hunk were settled: `[itemId\npath, outcome]`, newest last. */
const OUTCOMES_KEY = "spark.reviewOutcomes";
const MAX_OUTCOMES = 500;

/** What the controller tells its views: every action, and a whole new view when the thread changes. */
export interface ViewSink {
  actions(actions: { action: ViewAction; at: number }[]): void;
  snapshot(view: ThreadView): void;
}

/**
 * The extension's one chat: which thread it shows, its view model (the pure reducer over the
 * host's events), and the requests the UI makes. Views, the review of edits and approvals all
 * listen to it; none of them talks to the host directly.
 */
export class ChatController implements vscode.Disposable {
  private threadId: string | null = null;
  private current: ThreadView = emptyView();
  private readonly sinks = new Set<ViewSink>();
  private readonly eventEmitter = new vscode.EventEmitter<StampedEvent>();
  private readonly viewEmitter = new vscode.EventEmitter<ThreadView>();
  private readonly disposables: vscode.Disposable[] = [];
  /** The last `/review`'s findings, in the Problems panel. */
  private readonly reviewDiagnostics = new ReviewDiagnostics();
  private opening: Promise<string> | null = null;
  /** A thread.start was sent: its thread.started (from the client, before the promise) is this chat's. */
  private adopting = false;
  /** A turn.start was sent and its turn.started has not come yet: more input steers or queues. */
  private starting = false;
  /** Type-ahead: the chat input's text goes to the idle thread as a draft; a hint, never an error. */
  private readonly drafts = new DraftPacer((text) => {
    const threadId = this.threadId;
    if (!threadId || this.busy || this.connection.state.status !== "connected") return;
    void this.connection.ensureConnected().then(
      (client) => client.draft(threadId, text),
      () => {},
    );
  });

  /** The shown thread's workspace files that match an `@` mention's `query`, best first; none without a thread. */
  async workspaceFiles(query: string): Promise<string[]> {
    const threadId = this.threadId;
    if (!threadId || this.connection.state.status !== "connected") return [];
    const client = await this.connection.ensureConnected();
    return client.workspaceFiles(threadId, query);
  }

  /** Events of the thread shown, after the view took them in. */
  readonly onEvent = this.eventEmitter.event;
  readonly onDidChangeView = this.viewEmitter.event;

  constructor(
    private readonly connection: SparkConnection,
    private readonly state: vscode.Memento,
  ) {
    this.disposables.push(
      connection.onEvent((event) => {
        // The first event of a thread this controller is starting names it.
        if (this.adopting && event.type === "thread.started" && this.threadId === null) {
          this.adopting = false;
          this.threadId = event.thread_id;
        }
        if (event.thread_id !== this.threadId) return;
        if (event.type === "turn.started") this.starting = false;
        this.apply(event);
        this.eventEmitter.fire(event);
      }),
      // The host could not continue this thread's events: what it sends next is the whole thread.
      connection.onReset((threadId) => {
        if (threadId === this.threadId) this.replaceView(emptyView(threadId));
      }),
      connection.onHostError((message) => {
        this.starting = false;
        this.apply({ type: "local.notice", text: message, tone: "error" });
      }),
    );
  }

  get view(): ThreadView {
    return this.current;
  }

  get thread(): ThreadInfo | null {
    return this.current.info;
  }

  get running(): boolean {
    return this.current.turn !== null;
  }

  /** Running, or about to: what decides whether new input starts a turn. */
  private get busy(): boolean {
    return this.starting || this.running;
  }

  addSink(sink: ViewSink): vscode.Disposable {
    this.sinks.add(sink);
    sink.snapshot(this.current);
    return new vscode.Disposable(() => this.sinks.delete(sink));
  }

  /** The thread to talk in: the current one, else the workspace's last one, else a new one. */
  ensureThread(): Promise<string> {
    if (this.threadId) return Promise.resolve(this.threadId);
    this.opening ??= this.openThread().finally(() => {
      this.opening = null;
    });
    return this.opening;
  }

  private async openThread(): Promise<string> {
    const client = await this.connection.ensureConnected();
    const last = this.state.get<string>(LAST_THREAD_KEY);
    if (last) {
      try {
        const listed = await client.list();
        if (listed.some((thread) => thread.id === last)) return await this.show(client, last);
      } catch {
        // A thread that cannot be resumed is left behind; a new one starts.
      }
    }
    return this.startNew(client);
  }

  /** Starts a new thread and shows it. */
  async newThread(): Promise<void> {
    const client = await this.connection.ensureConnected();
    await this.startNew(client);
  }

  /**
   * Forks the thread shown from the turn its user message `itemId` starts (`thread.fork`) and
   * shows the fork; the parent goes on on the host, listed as before.
   */
  async fork(itemId: string): Promise<void> {
    const parent = this.threadId;
    if (!parent) return;
    const client = await this.connection.ensureConnected();
    this.leave(client);
    this.reset();
    this.adopting = true;
    let thread: ThreadInfo;
    try {
      thread = await client.forkThread(parent, itemId);
    } catch (error) {
      // The host refused (a turn running, say): back to the parent, as it was.
      this.adopting = false;
      await this.show(client, parent);
      throw error;
    } finally {
      this.adopting = false;
    }
    this.threadId = thread.id;
    await this.state.update(LAST_THREAD_KEY, thread.id);
  }

  /** Lists the threads and shows the one picked. */
  async pickThread(): Promise<void> {
    const client = await this.connection.ensureConnected();
    const threads = await client.list();
    const picked = await vscode.window.showQuickPick(
      threads.map((thread) => ({
        label: thread.title,
        description: thread.id === this.threadId ? "current" : new Date(thread.updatedAt).toLocaleString(),
        detail: thread.cwd,
        id: thread.id,
      })),
      { title: "Resume a Spark thread", matchOnDetail: true },
    );
    if (picked && picked.id !== this.threadId) await this.show(client, picked.id);
  }

  private async startNew(client: HostClient): Promise<string> {
    this.leave(client);
    this.reset();
    this.adopting = true;
    let thread: ThreadInfo;
    try {
      thread = await client.startThread();
    } finally {
      this.adopting = false;
    }
    this.threadId = thread.id;
    await this.state.update(LAST_THREAD_KEY, thread.id);
    return thread.id;
  }

  private async show(client: HostClient, threadId: string): Promise<string> {
    this.leave(client);
    this.reset();
    this.threadId = threadId;
    try {
      await client.resumeThread(threadId);
    } catch (error) {
      this.threadId = null;
      throw error;
    }
    await this.state.update(LAST_THREAD_KEY, threadId);
    return threadId;
  }

  private leave(client: HostClient): void {
    if (this.threadId) client.forget(this.threadId);
    this.threadId = null;
  }

  private reset(): void {
    this.starting = false;
    this.replaceView(emptyView());
  }

  /** Replaces the whole view: every sink gets it as a snapshot. */
  private replaceView(view: ThreadView): void {
    this.current = view;
    for (const sink of this.sinks) sink.snapshot(this.current);
    this.viewEmitter.fire(this.current);
  }

  /**
   * Sends a message: starts a turn when idle; while one runs, steers it (`auto`) or queues the
   * message behind it (`queue`). `plan`: the turn it starts runs in plan mode (and so do the
   * thread's next ones); default mode otherwise.
   */
  async send(text: string, mode: "auto" | "queue" = "auto", plan = false): Promise<void> {
    this.drafts.reset();
    const input = text.trim();
    if (!input) return;
    let review: ReviewTarget | null;
    try {
      review = reviewCommand(input);
    } catch (error) {
      // Bad arguments: the usage, and nothing sent.
      this.fail(error);
      return;
    }
    const threadId = await this.ensureThread();
    // `/review [args]`, as in the terminal: beside the thread, not a turn of it; not awaited (minutes).
    if (review) {
      void this.review(threadId, review);
      return;
    }
    // `/compact [focus]`, as in the terminal: the thread says what it freed (a notice, the meter).
    const compact = /^\/compact(?:\s+([\s\S]*))?$/i.exec(input);
    if (compact) {
      const focus = compact[1]?.trim();
      await this.request({ type: "thread.compact", thread_id: threadId, ...(focus ? { focus } : {}) });
      return;
    }
    const type = !this.busy ? "turn.start" : mode === "queue" ? "turn.queue" : "turn.steer";
    // Set before the request goes out: a second message sent meanwhile (both waiting for a thread
    // that starts once the model has loaded) must steer or queue, not start a second turn.
    if (type === "turn.start") this.starting = true;
    try {
      await this.request(
        type === "turn.start"
          ? { type, thread_id: threadId, input, mode: plan ? "plan" : "default" }
          : { type, thread_id: threadId, input },
      );
    } catch (error) {
      if (type === "turn.start") this.starting = false;
      throw error;
    }
  }

  /**
   * Reviews `target` in the thread's workspace (`thread.review`): each step and then the findings
   * as notices in the chat (while it still shows the thread), the findings in Problems in place
   * of the last review's. A failure is a notice and an error message; Problems keep what they had.
   */
  async review(threadId: string, target: ReviewTarget): Promise<void> {
    const cwd = this.current.info?.cwd ?? vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const notice = (text: string, tone: Tone) => {
      if (this.threadId === threadId) this.apply({ type: "local.notice", text, tone });
    };
    notice("Reviewing (read-only: the model may read files, never edit or run them)...", "dim");
    try {
      const client = await this.connection.ensureConnected();
      const answer = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: "Spark: reviewing" },
        (progress) =>
          client.review(threadId, target, (step) => {
            progress.report({ message: step });
            notice(step, "dim");
          }),
      );
      const outcome = reviewOutcome(answer, cwd ? reviewRoot(cwd) : null);
      this.reviewDiagnostics.publish(outcome.diagnostics);
      for (const { text, tone } of outcome.notices) notice(text, tone);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      notice(`Review failed: ${message}`, "error");
      void vscode.window.showErrorMessage(`Spark: review failed: ${message}`);
    }
  }

  /** The chat input now reads `text` (type-ahead). */
  typing(text: string): void {
    this.drafts.update(text);
  }

  /** Resolves with the status of the turn started for `input` (sent, or queued, by the caller). */
  turnFor(input: string): Promise<StampedEvent & { type: "turn.completed" }> {
    return new Promise((resolve) => {
      let turnId: string | null = null;
      const listener = this.onEvent((event) => {
        if (event.type === "turn.started" && turnId === null && event.input === input.trim())
          turnId = event.turn_id;
        if (event.type === "turn.completed" && event.turn_id === turnId) {
          listener.dispose();
          resolve(event);
        }
      });
    });
  }

  async interrupt(): Promise<void> {
    if (!this.threadId || !this.running) return;
    await this.request({ type: "turn.interrupt", thread_id: this.threadId });
  }

  async respondToApproval(approvalId: string, approved: boolean): Promise<void> {
    if (!this.threadId) return;
    await this.request({
      type: "approval.respond",
      thread_id: this.threadId,
      approval_id: approvalId,
      approved,
    });
  }

  /**
   * Goes back to before user message `itemId` of the thread shown (`thread.rewind`); the message's
   * text, for the input after a conversation rewind. Throws the host's refusal (a file changed since).
   */
  async rewind(itemId: string, restore: RewindRestore): Promise<string | null> {
    const threadId = this.threadId;
    const entry = this.current.entries.find((candidate) => candidate.id === itemId);
    if (!threadId || entry?.kind !== "user") return null;
    const client = await this.connection.ensureConnected();
    await client.request({ type: "thread.rewind", thread_id: threadId, item_id: itemId, restore });
    return entry.text;
  }

  async undo(): Promise<void> {
    const threadId = await this.ensureThread();
    await this.request({ type: "thread.undo", thread_id: threadId });
  }

  /**
   * Keeps (`accept`) or restores (`reject`) one file of an applied patch on the host. Default
   * thread: the one shown.
   */
  async resolvePatch(
    itemId: string,
    path: string,
    action: "accept" | "reject",
    threadId = this.threadId,
  ): Promise<void> {
    if (!threadId) return;
    const type = action === "accept" ? "patch.accept" : "patch.reject";
    await this.request({ type, thread_id: threadId, item_id: itemId, path });
  }

  /** Shows in the chat how a file reviewed in the editor was settled. */
  noteOutcome(threadId: string, itemId: string, path: string, outcome: FileState): void {
    const outcomes = this.state.get<[string, FileState][]>(OUTCOMES_KEY, []);
    const key = `${itemId}\n${path}`;
    const kept = outcomes.filter(([candidate]) => candidate !== key).slice(-(MAX_OUTCOMES - 1));
    void this.state.update(OUTCOMES_KEY, [...kept, [key, outcome]]);
    if (threadId === this.threadId) this.apply({ type: "local.patch", itemId, path, state: outcome });
  }

  /**
   * Outcomes of editor reviews are not the host's to keep: when a replay (a resumed thread, a
   * restarted server) brings back their tool calls, they are noted again.
   */
  private restoreOutcomes(action: ViewAction): void {
    const items =
      action.type === "thread.history"
        ? action.items.filter((item) => item.type === "tool_call")
        : action.type === "item.completed" && action.item.type === "tool_call"
          ? [action.item]
          : [];
    if (items.length === 0) return;
    const outcomes = new Map(this.state.get<[string, FileState][]>(OUTCOMES_KEY, []));
    for (const item of items) {
      if (item.type !== "tool_call" || item.display?.kind !== "diff") continue;
      for (const file of item.display.files) {
        const outcome = outcomes.get(`${item.id}\n${file.path}`);
        if (outcome) this.apply({ type: "local.patch", itemId: item.id, path: file.path, state: outcome });
      }
    }
  }

  /** Sends a request; failures become a notice in the chat and an error message. */
  private async request(request: ThreadRequest): Promise<void> {
    try {
      const client = await this.connection.ensureConnected();
      // Not awaited: the host's answer (an ack, or its error for this request) arrives later.
      client.request(request).catch((error: unknown) => this.fail(error));
    } catch (error) {
      this.fail(error);
      throw error;
    }
  }

  private fail(error: unknown): void {
    const message =
      error instanceof HostClientError || error instanceof Error ? error.message : String(error);
    this.apply({ type: "local.notice", text: message, tone: "error" });
    void vscode.window.showErrorMessage(`Spark: ${message}`);
  }

  private apply(action: ViewAction): void {
    const at = Date.now();
    this.current = reduceView(this.current, action, at);
    for (const sink of this.sinks) sink.actions([{ action, at }]);
    this.viewEmitter.fire(this.current);
    this.restoreOutcomes(action);
  }

  dispose(): void {
    for (const disposable of this.disposables) disposable.dispose();
    this.reviewDiagnostics.dispose();
    this.eventEmitter.dispose();
    this.viewEmitter.dispose();
  }
}
