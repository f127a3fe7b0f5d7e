import type { HostEvent, ThreadInfo } from "../../protocol/agent.js";
import type { HostRequest } from "../../protocol/agent-requests.js";
import { DraftPacer } from "../../protocol/draft-pacer.js";
import { type ConnectionStatus, HostConnection } from "./host-connection.js";
import { applyEvent, emptyView, type ThreadView } from "./thread-view.js";

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
}

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
 * one per animation frame, however fast tokens arrive.
 */
export class AppStore {
  state: AppState;
  private readonly listeners = new Set<() => void>();
  private readonly connection: HostConnection;
  private frame: number | null = null;
  private awaitingNew = false;
  private modelPoll: ReturnType<typeof setTimeout> | null = null;
  private errorCount = 0;
  /** Type-ahead: the message being typed goes to the open, idle thread as a draft. */
  private readonly drafts = new DraftPacer((text) => {
    const view = this.current;
    if (view && !view.turn) this.send({ type: "turn.draft", thread_id: view.id, input: text });
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
    };
    this.connection = new HostConnection({
      url: options.url,
      key: options.key,
      onEvent: (event) => this.onEvent(event),
      onOpen: () => this.onOpen(),
      onStatus: (status, detail) => this.update({ status, statusDetail: detail }),
    });
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
    const view = this.current;
    if (!view) {
      // One new session however many messages arrive before it starts; each is sent once, in order.
      if (!this.awaitingNew && !this.send({ type: "thread.start" })) return false;
      this.awaitingNew = true;
      this.update({ pending: [...this.state.pending, text] });
      return true;
    }
    return this.send({ type: view.turn ? "turn.steer" : "turn.start", thread_id: view.id, input: text });
  }

  /** Tab: runs the message after the current turn (at once when idle). */
  queue(text: string): boolean {
    this.drafts.reset();
    const view = this.current;
    if (!view) return this.submit(text);
    return this.send({ type: "turn.queue", thread_id: view.id, input: text });
  }

  interrupt(): void {
    const view = this.current;
    if (view?.turn) this.send({ type: "turn.interrupt", thread_id: view.id });
  }

  newThread(): void {
    if (this.send({ type: "thread.start" })) this.awaitingNew = true;
  }

  openThread(threadId: string): void {
    if (!this.state.views[threadId]) {
      if (!this.send({ type: "thread.resume", thread_id: threadId })) return;
      this.state.views = { ...this.state.views, [threadId]: emptyView(threadId) };
    }
    this.setCurrent(threadId);
  }

  approve(approvalId: string, approved: boolean): void {
    const view = this.current;
    if (view) this.send({ type: "approval.respond", thread_id: view.id, approval_id: approvalId, approved });
  }

  resolveFile(itemId: string, path: string, accept: boolean): void {
    const view = this.current;
    if (view)
      this.send({
        type: accept ? "patch.accept" : "patch.reject",
        thread_id: view.id,
        item_id: itemId,
        path,
      });
  }

  cancelSubAgent(subagentId: string): void {
    const view = this.current;
    if (view) this.send({ type: "subagent.cancel", thread_id: view.id, subagent_id: subagentId });
  }

  undo(): void {
    const view = this.current;
    if (view) this.send({ type: "thread.undo", thread_id: view.id });
  }

  rename(threadId: string, title: string): void {
    this.send({ type: "thread.rename", thread_id: threadId, title });
  }

  remove(threadId: string): void {
    this.send({ type: "thread.delete", thread_id: threadId });
  }

  dismissError(id: number): void {
    this.update({ errors: this.state.errors.filter((error) => error.id !== id) });
  }

  private send(request: HostRequest): boolean {
    if (this.connection.send(request)) return true;
    this.pushError("Not connected; reconnecting…");
    return false;
  }

  private onOpen(): void {
    this.connection.send({ type: "thread.list" });
    void this.pollModels();
    // Resume every thread shown so far from the last event seen: nothing lost, nothing repeated.
    for (const view of Object.values(this.state.views)) {
      this.connection.send({
        type: "thread.resume",
        thread_id: view.id,
        after_seq: view.lastSeq,
        ...(view.epoch ? { epoch: view.epoch } : {}),
      });
    }
  }

  private onEvent(event: HostEvent): void {
    switch (event.type) {
      case "thread.list":
        this.update({ sessions: event.threads });
        return;
      case "thread.deleted": {
        const { [event.thread_id]: _, ...views } = this.state.views;
        this.update({
          views,
          sessions: this.state.sessions.filter((info) => info.id !== event.thread_id),
        });
        if (this.state.currentId === event.thread_id) this.setCurrent(null);
        return;
      }
      case "error": {
        this.pushError(event.error.message);
        // The thread in the address is gone (deleted, or never saved before a restart): start over.
        const view = this.current;
        if (event.error.code === "not_found" && event.error.param === "thread_id" && view?.lastSeq === -1) {
          const { [view.id]: _, ...views } = this.state.views;
          this.update({ views });
          this.setCurrent(null);
        }
        return;
      }
      default:
        break;
    }
    let view = this.state.views[event.thread_id];
    if (!view) {
      if (!(event.type === "thread.started" && this.awaitingNew)) return;
      this.awaitingNew = false;
      view = emptyView(event.thread_id);
      this.state.views = { ...this.state.views, [view.id]: view };
      this.setCurrent(view.id);
      this.connection.send({ type: "thread.list" });
      const [first, ...rest] = this.state.pending;
      if (first !== undefined) {
        this.connection.send({ type: "turn.start", thread_id: view.id, input: first });
        for (const input of rest) this.connection.send({ type: "turn.queue", thread_id: view.id, input });
        this.update({ pending: [] });
      }
    }
    const next = applyEvent(view, event, performance.now());
    if (next === view) return;
    const patch: Partial<AppState> = { views: { ...this.state.views, [view.id]: next } };
    if (event.type === "thread.renamed") {
      const info = event.thread;
      patch.sessions = this.state.sessions.map((s) => (s.id === info.id ? { ...info } : s));
    }
    // A first turn names its session; the list has the new title and time.
    if (event.type === "turn.started" || event.type === "turn.completed") {
      this.connection.send({ type: "thread.list" });
    }
    this.update(patch);
  }

  /** Asks the server how its models are; again shortly while any is still loading. */
  private async pollModels(): Promise<void> {
    if (this.modelPoll) clearTimeout(this.modelPoll);
    this.modelPoll = null;
    let models: ModelLoadStatus[];
    try {
      const response = await fetch("/healthz", { cache: "no-store" });
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
