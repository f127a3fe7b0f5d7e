import { randomUUID } from "node:crypto";
import type { AgentMode, ThreadEvent, ThreadItem } from "../protocol/agent.js";

export type ThreadListener = (event: ThreadEvent) => void;

/** A thread's finished items and its event listeners: every item is narrated as it is recorded. */
export class ItemLog {
  readonly items: ThreadItem[] = [];
  private readonly listeners = new Set<ThreadListener>();

  constructor(items: readonly ThreadItem[] = []) {
    this.items.push(...items);
  }

  /** Subscribes to the thread's events; returns the unsubscribe function. */
  on(listener: ThreadListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(event: ThreadEvent): void {
    for (const listener of this.listeners) listener(event);
  }

  /** Records a user message; returns its id (the turn it starts is named by it). */
  recordUserMessage(turnId: string, text: string, mode: AgentMode = "default"): string {
    const item: ThreadItem = {
      type: "user_message",
      id: newItemId(),
      text,
      ...(mode === "plan" ? { mode } : {}),
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
}

export function newItemId(): string {
  return `item_${randomUUID().slice(0, 8)}`;
}
