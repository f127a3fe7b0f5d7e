import type { AgentMode, ThreadInfo, ThreadItem } from "../../protocol/agent.js";
import type { TerminalThread } from "../terminal-thread.js";
import { loadHighlighter } from "./agent-markdown.js";
import { ConversationStore, type ConversationStoreOptions } from "./conversation-store.js";

/**
 * One thread as the terminal UI shows it: the thread, the store its events fold into, and the
 * model it talks to. Subscribes on creation (or on {@link attach}, for a session whose thread was
 * still starting), so no event between then and the first frame is lost; `close` unsubscribes (the
 * thread itself belongs to whoever created it).
 */
export class TuiSession {
  private static nextId = 1;
  readonly id = TuiSession.nextId++;
  readonly store: ConversationStore;
  private current: TerminalThread | null = null;
  private unsubscribe: () => void = () => {};
  /** The mode chosen while the thread was still starting (Shift+Tab works from the first frame). */
  private startingMode: AgentMode | null = null;
  /** The saved session shown while its thread starts (see {@link SavedSession}). */
  private readonly saved: SavedSession | null;

  constructor(
    thread: TerminalThread | null,
    private model: string,
    storeOptions: ConversationStoreOptions = {},
    saved?: SavedSession,
  ) {
    this.store = new ConversationStore(storeOptions);
    this.saved = thread ? null : (saved ?? null);
    if (thread) this.attach(thread, model);
    else if (this.saved) {
      this.model ||= this.saved.info.model;
      this.store.load(this.saved.items);
      // In the first frame: the start that follows keeps the core busy for a while.
      this.store.flush();
    }
  }

  /** The thread's info; while it starts, the saved session's it resumes (null: a new one). */
  get info(): ThreadInfo | null {
    return this.current?.info ?? this.saved?.info ?? null;
  }

  /** The model the session talks to (the thread's, once it has one). */
  get modelId(): string {
    return this.model;
  }

  /** The thread, or null while the runtime is still starting. */
  get thread(): TerminalThread | null {
    return this.current;
  }

  /** The mode of the next turns: the thread's, or the one chosen while it was starting. */
  get mode(): AgentMode {
    return this.current?.mode ?? this.startingMode ?? "default";
  }

  setMode(mode: AgentMode): void {
    if (this.current) this.current.setMode(mode);
    else this.startingMode = mode;
  }

  /**
   * Gives a session created while starting its thread; shows what the thread already holds. The
   * model becomes the thread's (a trusted project's config may have changed which one it is).
   */
  attach(thread: TerminalThread, model: string = thread.model): void {
    if (this.current) throw new Error("The session already has a thread.");
    this.current = thread;
    this.model = model;
    if (this.startingMode) thread.setMode(this.startingMode);
    // The saved history already on screen is not printed again when the thread holds just that.
    if (thread.busy || !this.saved || !sameItems(this.saved.items, thread.history))
      this.store.load(thread.history, thread.busy);
    // Code in answers is highlighted: load the highlighter now, while the person types, rather
    // than while the first answer streams (its import takes about 0.1 s of the core).
    void loadHighlighter();
    this.unsubscribe = thread.on((event) => this.store.apply(event));
  }

  close(): void {
    this.unsubscribe();
    this.store.dispose();
  }
}

/**
 * A resumed session as its transcript has it: shown at once, while the model loads, and replaced
 * by the thread's own history once it is ready.
 */
export interface SavedSession {
  info: ThreadInfo;
  items: readonly ThreadItem[];
}

function sameItems(a: readonly ThreadItem[], b: readonly ThreadItem[]): boolean {
  return a.length === b.length && a.every((item, index) => item.id === b[index]!.id);
}
