import type { HostClient } from "../client-core/host-client.js";
import { HostThread } from "./host-thread.js";

/**
 * The threads the terminal UI opens on one agent host, in this process or on a `spark serve`:
 * `/new` opens another, `/model` switches the current one through the host protocol
 * (`thread.set_model`), and threads opened later start on the model chosen last.
 */
export class TuiThreads {
  private readonly opened: HostThread[] = [];
  private current: HostThread | null = null;
  /** The model chosen with /model, for the threads /new opens; null: the host's default. */
  private chosen: string | null = null;

  constructor(private readonly client: HostClient) {}

  /** Opens a saved or live thread (`threadId`), or a new one; it becomes the current thread. */
  async open(threadId?: string): Promise<HostThread> {
    const thread = await HostThread.open(this.client, threadId);
    this.opened.push(thread);
    this.current = thread;
    if (threadId === undefined && this.chosen !== null) await thread.setModel(this.chosen);
    return thread;
  }

  /**
   * Forks the current thread from the turn its user message `itemId` starts (default: the whole
   * conversation); the fork becomes the current thread (the parent goes on on the host).
   */
  async fork(itemId?: string): Promise<HostThread> {
    const parent = this.current;
    if (!parent) throw new Error("No thread is open yet.");
    const thread = await HostThread.fork(this.client, parent.info.id, itemId);
    this.opened.push(thread);
    this.current = thread;
    return thread;
  }

  /** Moves the current thread to `model`, after stopping its running turn; resolves with it. */
  async changeModel(model: string): Promise<HostThread> {
    const thread = this.current;
    if (!thread) throw new Error("No thread is open yet.");
    if (thread.busy) {
      thread.interrupt();
      await thread.whenIdle();
    }
    await thread.setModel(model);
    this.chosen = model;
    return thread;
  }

  /** Stops following every thread opened (they go on on the host). */
  close(): void {
    for (const thread of this.opened.splice(0)) thread.close();
  }
}
