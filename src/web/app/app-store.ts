import {
  type ConnectionStatus,
  HostClient,
  HostClientError,
  type PromptProgress,
  type ThreadRequest,
} from "../../client-core/host-client.js";
import { parseReviewArgs } from "../../client-core/review-text.js";
import { browserSocketFactory } from "../../client-core/socket.js";
import { emptyView, reduceView, type StampedEvent, type ThreadView } from "../../client-core/thread-view.js";
import type {
  McpServerInfo,
  ReviewTarget,
  RewindRestore,
  SessionDiff,
  ThreadInfo,
} from "../../protocol/agent.js";
import type { DecodedCatalog } from "../../protocol/catalog.js";
import { DraftPacer } from "../../protocol/draft-pacer.js";
import type { CatalogShown } from "./catalog-panel.js";
import type { ReviewShown } from "./review-panel.js";

/** The server's models as `/healthz` reports them. */
export interface ModelLoadStatus {
  id: string;
  status: "loading" | "ready" | "failed";
  progress?: number;
  error?: string;
}

/** While a model still loads (or failed to), how often the app asks the server again. */
const MODEL_POLL_MS = 500;

export interface AppState {
  status: ConnectionStatus;
  statusDetail: string | null;
  /** The server's models; empty until the first answer. */
  models: ModelLoadStatus[];
  /** Messages entered before the new session's thread started (it waits for the model): sent then, in order. */
  pending: string[];
  sessions: ThreadInfo[];
  currentId: string | null;
  views: Record<string, ThreadView>;
  errors: { id: number; message: string }[];
  /** The agent host's MCP servers, as it last listed them (not per thread). */
  mcpServers: readonly McpServerInfo[];
  /** The agent host's skills and defined agents (`catalog`). */
  catalog: DecodedCatalog;
  /** How far the host's evaluation of the agent prompt is (`prompt.progress`); null until it says. */
  prompt: PromptProgress | null;
  /** The listing `/skills` or `/agents` opened above the composer; null: none. */
  catalogShown: CatalogShown | null;
  /** What `/diff` showed above the composer (the session's changes); null: none. */
  sessionDiff: SessionDiff | null;
  /** What `/review` shows above the composer (its latest step, then its findings); null: none. */
  review: ReviewShown | null;
  /** Plan mode, the toggle by the message box: the turns it starts only read and answer with a plan. */
  plan: boolean;
  /** The message a conversation rewind took back, for the message box to edit (a new `n` each time). */
  refill: { text: string; n: number } | null;
}

/** What the Implement button under a plan sends, in default mode. */
export const IMPLEMENT_INPUT = "Implement the plan above.";

export interface AppStoreOptions {
  url: string;
  key: string | null;
  /** The thread to open at start (from the address). */
  threadId: string | null;
  /** Called when the open thread changes, to keep it in the address. */
  onThreadChange?: (threadId: string | null) => void;
}

/**
 * The app's state, changed only by host events and the person's actions. Renders are batched to
 * one per animation frame, however fast tokens arrive. The connection, its reconnects and the
 * resuming of every shown thread are the client core's {@link HostClient}.
 */
export class AppStore {
  state: AppState;
  private readonly listeners = new Set<() => void>();
  private readonly client: HostClient;
  private frame: number | null = null;
  private awaitingNew = false;
  private modelPoll: ReturnType<typeof setTimeout> | null = null;
  private errorCount = 0;
  /** The review the panel shows, if any (a later `/review` or closing it replaces it). */
  private reviewShown: symbol | null = null;
  /** Type-ahead: the message being typed goes to the open, idle thread as a draft. */
  private readonly drafts = new DraftPacer((text) => {
    const view = this.current;
    if (view && !view.turn && this.client.status === "open") this.client.draft(view.id, text);
  });

  constructor(private readonly options: AppStoreOptions) {
    this.state = {
      status: "connecting",
      statusDetail: null,
      models: [],
      pending: [],
      sessions: [],
      currentId: options.threadId,
      views: options.threadId ? { [options.threadId]: emptyView(options.threadId) } : {},
      errors: [],
      mcpServers: [],
      catalog: { skills: [], agents: [] },
      prompt: null,
      catalogShown: null,
      sessionDiff: null,
      review: null,
      plan: false,
      refill: null,
    };
    this.client = new HostClient({
      url: options.url,
      ...(options.key ? { apiKey: options.key } : {}),
      keyAsSubprotocol: true,
      createSocket: browserSocketFactory,
      retryFirstConnect: true,
    });
    this.client.on("event", (event) => this.onEvent(event));
    this.client.on("list", (sessions) => this.update({ sessions }));
    this.client.on("listed", (info) => this.onListed(info));
    this.client.on("mcp", (mcpServers) => this.update({ mcpServers }));
    this.client.on("catalog", (catalog) => this.update({ catalog }));
    this.client.on("prompt", (prompt) => this.update({ prompt }));
    this.client.on("deleted", (threadId) => this.onDeleted(threadId));
    this.client.on("error", (error) => this.pushError(error.message));
    this.client.on("reset", (threadId) => this.setView(emptyView(threadId)));
    this.client.on("status", (status) => void this.onStatus(status));
    addEventListener("online", () => this.client.retryNow());
    void this.client.connect();
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get current(): ThreadView | null {
    return this.state.currentId ? (this.state.views[this.state.currentId] ?? null) : null;
  }

  /** The composer's text changed. */
  typing(text: string): void {
    this.drafts.update(text);
  }

  /** Enter: starts a turn (a new session if none is open) or steers the running one. */
  submit(text: string): boolean {
    this.drafts.reset();
    // `/skills` and `/agents` list, as in the terminal; they never reach the model.
    const command = text.trim().toLowerCase();
    if (command === "/skills" || command === "/agents") {
      this.update({ catalogShown: command === "/skills" ? "skills" : "agents" });
      return true;
    }
    const view = this.current;
    // `/compact [focus]`, as in the terminal: the thread says what it freed (a notice, the meter).
    const compact = /^\/compact(?:\s+([\s\S]*))?$/i.exec(text.trim());
    if (compact && view) {
      const focus = compact[1]?.trim();
      return this.request({ type: "thread.compact", thread_id: view.id, ...(focus ? { focus } : {}) });
    }
    // `/diff`, as in the terminal: what the session changed, shown above the composer.
    if (/^\/diff$/i.test(text.trim()) && view) {
      this.client.sessionDiff(view.id).then(
        (sessionDiff) => this.update({ sessionDiff }),
        (error: unknown) => this.pushError(messageOf(error)),
      );
      return true;
    }
    // `/review [--base B | --commit C]`, as in the terminal: the host reviews the session's
    // workspace read-only; its latest step, then its findings, show above the composer.
    const review = /^\/review(?:\s+([\s\S]*))?$/i.exec(text.trim());
    if (review && view) return this.review(view.id, review[1] ?? "");
    if (!view) {
      // One new session however many messages arrive before it starts; each is sent once, in order.
      if (!this.awaitingNew && !this.newThread()) return false;
      this.update({ pending: [...this.state.pending, text] });
      return true;
    }
    if (view.turn) return this.request({ type: "turn.steer", thread_id: view.id, input: text });
    return this.request({ type: "turn.start", thread_id: view.id, input: text, mode: this.mode });
  }

  /** Closes what `/review` showed (a review still running goes on; its findings are not shown). */
  closeReview(): void {
    this.reviewShown = null;
    this.update({ review: null });
  }

  private review(threadId: string, args: string): boolean {
    let target: ReviewTarget;
    try {
      target = parseReviewArgs(args);
    } catch (error) {
      this.pushError(messageOf(error));
      return false;
    }
    const shown = Symbol("review");
    this.reviewShown = shown;
    this.update({ review: { status: "running", step: null } });
    this.client
      .review(threadId, target, (step) => {
        if (this.reviewShown === shown) this.update({ review: { status: "running", step } });
      })
      .then(
        (result) => {
          if (this.reviewShown === shown) this.update({ review: { status: "done", review: result } });
        },
        (error: unknown) => {
          if (this.reviewShown !== shown) return;
          this.reviewShown = null;
          this.update({ review: null });
          this.pushError(`Review failed: ${messageOf(error)}`);
        },
      );
    return true;
  }

  /** Closes what `/diff` showed. */
  closeDiff(): void {
    this.update({ sessionDiff: null });
  }

  /** Closes the `/skills` or `/agents` listing. */
  closeCatalog(): void {
    this.update({ catalogShown: null });
  }

  /** The plan-mode toggle: also the open thread's mode, so queued turns follow it. */
  setPlan(plan: boolean): void {
    this.update({ plan });
    const view = this.current;
    if (view && this.client.status === "open")
      this.request({ type: "thread.set_mode", thread_id: view.id, mode: this.mode });
  }

  /** Under a plan: switches plan mode off and asks the model to carry the plan out. */
  implement(): boolean {
    const view = this.current;
    if (!view || view.turn) return false;
    this.update({ plan: false });
    return this.request({ type: "turn.start", thread_id: view.id, input: IMPLEMENT_INPUT, mode: "default" });
  }

  private get mode() {
    return this.state.plan ? ("plan" as const) : ("default" as const);
  }

  /** The open thread's workspace files matching an `@` mention's `query`, best first (none without a thread). */
  async files(query: string): Promise<string[]> {
    const view = this.current;
    if (!view || this.client.status !== "open") return [];
    return this.client.workspaceFiles(view.id, query);
  }

  /** Tab: runs the message after the current turn (at once when idle). */
  queue(text: string): boolean {
    this.drafts.reset();
    const view = this.current;
    if (!view) return this.submit(text);
    return this.request({ type: "turn.queue", thread_id: view.id, input: text });
  }

  interrupt(): void {
    const view = this.current;
    if (view?.turn) this.request({ type: "turn.interrupt", thread_id: view.id });
  }

  /** Starts a new session (with `worktree`, in a git worktree of the host's); false when not connected. */
  newThread(options: { worktree?: { name?: string } } = {}): boolean {
    if (this.client.status !== "open") {
      this.pushError("Not connected; reconnecting…");
      return false;
    }
    this.awaitingNew = true;
    this.client.startThread(options).then(
      (info) => this.onStarted(info),
      (error: unknown) => {
        this.awaitingNew = false;
        this.update({ pending: [] });
        this.pushError(messageOf(error));
      },
    );
    return true;
  }

  openThread(threadId: string): void {
    if (!this.state.views[threadId] && !this.resume(threadId)) return;
    this.setCurrent(threadId);
  }

  approve(approvalId: string, approved: boolean): void {
    const view = this.current;
    if (view)
      this.request({ type: "approval.respond", thread_id: view.id, approval_id: approvalId, approved });
  }

  resolveFile(itemId: string, path: string, accept: boolean): void {
    const view = this.current;
    if (view)
      this.request({
        type: accept ? "patch.accept" : "patch.reject",
        thread_id: view.id,
        item_id: itemId,
        path,
      });
  }

  cancelSubAgent(subagentId: string): void {
    const view = this.current;
    if (view) this.request({ type: "subagent.cancel", thread_id: view.id, subagent_id: subagentId });
  }

  /** Forks the current thread from the turn its user message `itemId` starts; the fork becomes current. */
  fork(itemId: string): void {
    const view = this.current;
    if (!view) return;
    if (this.client.status !== "open") {
      this.pushError("Not connected; reconnecting…");
      return;
    }
    this.client.forkThread(view.id, itemId).then(
      (info) => this.setCurrent(info.id),
      (error: unknown) => this.pushError(messageOf(error)),
    );
  }

  undo(): void {
    const view = this.current;
    if (view) this.request({ type: "thread.undo", thread_id: view.id });
  }

  /**
   * Goes back to before user message `itemId` of the open thread; after a conversation rewind its
   * text goes back into the message box. A refusal (a file changed since) is shown.
   */
  rewind(itemId: string, restore: RewindRestore): void {
    const view = this.current;
    const entry = view?.entries.find((candidate) => candidate.id === itemId);
    if (!view || entry?.kind !== "user") return;
    if (this.client.status !== "open") {
      this.pushError("Not connected; reconnecting…");
      return;
    }
    this.client.request({ type: "thread.rewind", thread_id: view.id, item_id: itemId, restore }).then(
      () => {
        if (restore !== "code")
          this.update({ refill: { text: entry.text, n: (this.state.refill?.n ?? 0) + 1 } });
      },
      (error: unknown) => this.pushError(messageOf(error)),
    );
  }

  rename(threadId: string, title: string): void {
    this.request({ type: "thread.rename", thread_id: threadId, title });
  }

  remove(threadId: string): void {
    this.request({ type: "thread.delete", thread_id: threadId });
  }

  dismissError(id: number): void {
    this.update({ errors: this.state.errors.filter((error) => error.id !== id) });
  }

  /** Sends a request; its error, when the host answers with one, is shown. False when not connected. */
  private request(request: ThreadRequest): boolean {
    if (this.client.status !== "open") {
      this.pushError("Not connected; reconnecting…");
      return false;
    }
    this.client.request(request).catch((error: unknown) => this.pushError(messageOf(error)));
    return true;
  }

  private resume(threadId: string): boolean {
    if (this.client.status !== "open") {
      this.pushError("Not connected; reconnecting…");
      return false;
    }
    this.setView(emptyView(threadId));
    this.client.resumeThread(threadId).catch((error: unknown) => {
      this.pushError(messageOf(error));
      // The thread in the address is gone (deleted, or never saved before a restart): start over.
      if (error instanceof HostClientError && error.wire?.code === "not_found") this.onDeleted(threadId);
    });
    return true;
  }

  private async onStatus(status: ConnectionStatus): Promise<void> {
    this.update({ status, statusDetail: null });
    if (status === "open") {
      this.refreshList();
      void this.pollModels();
      // The thread in the address, on the first connection (later ones are resumed by the client).
      const current = this.current;
      if (current && current.lastSeq === -1 && this.client.lastSeq(current.id) === -1)
        this.resume(current.id);
    } else if (status === "reconnecting") {
      const detail = await this.diagnose();
      if (this.state.status === "reconnecting") this.update({ statusDetail: detail });
    }
  }

  private onStarted(info: ThreadInfo): void {
    this.awaitingNew = false;
    this.setCurrent(info.id);
    const [first, ...rest] = this.state.pending;
    this.update({ pending: [] });
    if (first === undefined) return;
    this.request({ type: "turn.start", thread_id: info.id, input: first, mode: this.mode });
    for (const input of rest) this.request({ type: "turn.queue", thread_id: info.id, input });
  }

  private onEvent(event: StampedEvent): void {
    const view = this.state.views[event.thread_id] ?? emptyView(event.thread_id);
    const next = reduceView(view, event, performance.now());
    if (next === view) return;
    const patch: Partial<AppState> = { views: { ...this.state.views, [view.id]: next } };
    if (event.type === "thread.renamed") {
      const info = event.thread;
      patch.sessions = this.state.sessions.map((s) => (s.id === info.id ? { ...info } : s));
    }
    this.update(patch);
  }

  /** A session is new or changed (the host says so for every session, followed or not). */
  private onListed(info: ThreadInfo): void {
    const sessions = [{ ...info }, ...this.state.sessions.filter((s) => s.id !== info.id)];
    // Newest first, as the host lists them; a stable sort keeps the rest in their order.
    sessions.sort((a, b) => b.updatedAt.localeCompare(a.updatedAt));
    this.update({ sessions });
  }

  private onDeleted(threadId: string): void {
    const { [threadId]: _, ...views } = this.state.views;
    this.client.forget(threadId);
    this.update({ views, sessions: this.state.sessions.filter((info) => info.id !== threadId) });
    if (this.state.currentId === threadId) this.setCurrent(null);
  }

  private refreshList(): void {
    this.client.list().catch((error: unknown) => {
      if (!(error instanceof HostClientError) || error.code === "host_error")
        this.pushError(messageOf(error));
    });
  }

  private setView(view: ThreadView): void {
    this.update({ views: { ...this.state.views, [view.id]: view } });
  }

  /** A browser is told nothing about a refused upgrade; ask the server over HTTP what is wrong. */
  private async diagnose(): Promise<string | null> {
    try {
      const headers: Record<string, string> = this.options.key
        ? { authorization: `Bearer ${this.options.key}` }
        : {};
      const response = await fetch("/v1/models", { headers, cache: "no-store" });
      if (response.status === 401) {
        return "The server needs an API key: open the address that spark serve printed (it ends in #key=…).";
      }
      return null;
    } catch {
      return "The server cannot be reached.";
    }
  }

  /** Asks the server how its models are; again shortly while any is still loading. */
  private async pollModels(): Promise<void> {
    if (this.modelPoll) clearTimeout(this.modelPoll);
    this.modelPoll = null;
    let models: ModelLoadStatus[];
    try {
      // Without the key the server says only whether it is up.
      const headers: Record<string, string> = this.options.key
        ? { authorization: `Bearer ${this.options.key}` }
        : {};
      const response = await fetch("/healthz", { headers, cache: "no-store" });
      models = ((await response.json()) as { models?: ModelLoadStatus[] }).models ?? [];
    } catch {
      return; // the connection's own status says the server is gone
    }
    this.update({ models });
    if (models.some((model) => model.status === "loading")) {
      this.modelPoll = setTimeout(() => void this.pollModels(), MODEL_POLL_MS);
    }
  }

  private setCurrent(threadId: string | null): void {
    this.update({ currentId: threadId });
    this.options.onThreadChange?.(threadId);
  }

  private pushError(message: string): void {
    const id = ++this.errorCount;
    this.update({ errors: [...this.state.errors.slice(-3), { id, message }] });
    setTimeout(() => this.dismissError(id), 8000);
  }

  private update(patch: Partial<AppState>): void {
    this.state = { ...this.state, ...patch };
    if (this.frame !== null) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = null;
      for (const listener of this.listeners) listener();
    });
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
