import { randomUUID } from "node:crypto";
import type { AgentMode, ThreadEvent, ThreadItem } from "../protocol/agent.js";

export type ThreadListener = (event: ThreadEvent) => void;

/** A thread's finished items and its event listeners: every item is narrated as it is recorded. */
export class ItemLog {
  readonly items: ThreadItem[] = [];
  private readonly listeners = new Set<ThreadListener>();
  /** Tool calls started and not completed yet, by turn, in the order they started. */
  private readonly running = new Map<string, Set<string>>();

  constructor(items: readonly ThreadItem[] = []) {
    this.items.push(...items);
  }

  /** Subscribes to the thread's events; returns the unsubscribe function. */
  on(listener: ThreadListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(event: ThreadEvent): void {
    this.track(event);
    for (const listener of this.listeners) listener(event);
  }

  /**
   * The call of `turnId` whose tool runs now: its oldest call not completed yet (a turn runs its
   * calls one at a time, in the order the model wrote them, and completes each before the next).
   */
  runningCall(turnId: string): string | undefined {
    return this.running.get(turnId)?.values().next().value;
  }

  /** Records a user message (`steer`: one that steered the running turn); returns its id. */
  recordUserMessage(turnId: string, text: string, mode: AgentMode = "default", steer = false): string {
    const item: ThreadItem = {
      type: "user_message",
      id: newItemId(),
      text,
      ...(mode === "plan" ? { mode } : {}),
      ...(steer ? { steer: true as const } : {}),
    };
    this.emit({ type: "item.started", turn_id: turnId, item });
    this.complete(turnId, item);
    return item.id;
  }

  /** Cuts the items back to the first `length` (a rewound conversation). */
  truncate(length: number): ThreadItem[] {
    return this.items.splice(length);
  }

  complete(turnId: string, item: ThreadItem): void {
    this.items.push(item);
    this.emit({ type: "item.completed", turn_id: turnId, item });
  }

  private track(event: ThreadEvent): void {
    if (event.type === "turn.completed") this.running.delete(event.turn_id);
    if ((event.type !== "item.started" && event.type !== "item.completed") || event.item.type !== "tool_call")
      return;
    let calls = this.running.get(event.turn_id);
    if (event.type === "item.completed") {
      calls?.delete(event.item.id);
      if (calls?.size === 0) this.running.delete(event.turn_id);
    } else if (event.item.status === "running") {
      if (!calls) {
        calls = new Set();
        this.running.set(event.turn_id, calls);
      }
      calls.add(event.item.id);
    }
  }
}

export function newItemId(): string {
  return `item_${randomUUID().slice(0, 8)}`;
}

export function newTurnId(): string {
  return `turn_${randomUUID().replaceAll("-", "").slice(0, 16)}`;
}
