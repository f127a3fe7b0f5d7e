import type { AgentThread } from "../../agent/agent-thread.js";
import { ConversationStore, type ConversationStoreOptions } from "./conversation-store.js";

/**
 * One thread as the terminal UI shows it: the thread, the store its events fold into, and the
 * model it talks to. Subscribes on creation, so no event between creation and the first frame is
 * lost; `close` unsubscribes (the thread itself belongs to whoever created it).
 */
export class TuiSession {
  private static nextId = 1;
  readonly id = TuiSession.nextId++;
  readonly store: ConversationStore;
  private readonly unsubscribe: () => void;

  constructor(
    readonly thread: AgentThread,
    readonly modelId: string,
    storeOptions: ConversationStoreOptions = {},
  ) {
    this.store = new ConversationStore(storeOptions);
    this.store.load(thread.history, thread.busy);
    this.unsubscribe = thread.on((event) => this.store.apply(event));
  }

  close(): void {
    this.unsubscribe();
    this.store.dispose();
  }
}
