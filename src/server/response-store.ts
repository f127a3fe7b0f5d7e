import type { ChatMessage, ToolDefinition } from "../protocol/chat.js";

/**
 * What a later `previous_response_id` needs from a finished response. Each entry holds only its
 * own turn and a reference to its parent, so a long chain costs memory linear in its length.
 */
export interface StoredResponse {
  id: string;
  parent: StoredResponse | null;
  /** This turn's input followed by its output. */
  messages: ChatMessage[];
  /** The KV-cache key the chain runs under. */
  conversation: string;
  model: string;
  /** Settings a steered continuation inherits. */
  settings: ResponseSettings;
  /** Function calls of the output still waiting for their results. */
  pendingCalls: { callId: string; name: string }[];
}

export interface ResponseSettings {
  instructions: string | null;
  tools: ToolDefinition[];
  rawTools: unknown[];
  toolChoice: unknown;
  maxOutputTokens: number | null;
  temperature: number | null;
  topP: number | null;
  store: boolean;
  metadata: Record<string, string>;
  /** Predicted Outputs text; not inherited by a steered successor. */
  prediction?: string;
}

/** The whole conversation up to and including `response`. */
export function historyOf(response: StoredResponse | null): ChatMessage[] {
  const turns: ChatMessage[][] = [];
  for (let at = response; at; at = at.parent) turns.push(at.messages);
  return turns.reverse().flat();
}

/** Responses kept for `previous_response_id`, least recently used evicted first. */
export class ResponseStore {
  private readonly entries = new Map<string, StoredResponse>();

  constructor(private readonly capacity = 4096) {}

  get(id: string): StoredResponse | undefined {
    const entry = this.entries.get(id);
    if (entry) {
      this.entries.delete(id);
      this.entries.set(id, entry);
    }
    return entry;
  }

  put(entry: StoredResponse): void {
    this.entries.delete(entry.id);
    this.entries.set(entry.id, entry);
    while (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }

  get size(): number {
    return this.entries.size;
  }
}
