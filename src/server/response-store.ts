import type { ChatMessage, ToolChoice, ToolDefinition } from "../protocol/chat.js";

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
  /** `tool_choice` as the request sent it (echoed in the response object). */
  toolChoice: unknown;
  /** `tool_choice` as the engine applies it. Default: `"auto"`. */
  engineToolChoice?: ToolChoice;
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

export interface ResponseStoreOptions {
  /** Responses kept. Default: 4096. */
  maxEntries?: number;
  /**
   * Bytes the kept responses take (each entry's own turn, settings and tools as JSON), counting the
   * earlier turns a kept response still needs; least recently used responses go first until the
   * total fits. A response larger than the whole budget is not kept. Default: 256 MiB.
   */
  maxBytes?: number;
}

interface Held {
  bytes: number;
  /** Kept children holding this entry through `parent`, plus one while it is kept itself. */
  refs: number;
}

/**
 * Responses kept for `previous_response_id`, least recently used evicted first, bounded by count
 * and by bytes. An evicted response whose turns a kept one still needs (its `parent` chain) stays
 * counted until no kept response needs it, so the byte budget bounds the memory really held.
 */
export class ResponseStore {
  private readonly entries = new Map<string, StoredResponse>();
  private readonly held = new Map<StoredResponse, Held>();
  private heldBytes = 0;
  private readonly maxEntries: number;
  private readonly maxBytes: number;

  constructor(options: ResponseStoreOptions = {}) {
    this.maxEntries = options.maxEntries ?? 4096;
    this.maxBytes = options.maxBytes ?? 256 * 1024 * 1024;
  }

  get(id: string): StoredResponse | undefined {
    const entry = this.entries.get(id);
    if (entry) {
      this.entries.delete(id);
      this.entries.set(id, entry);
    }
    return entry;
  }

  put(entry: StoredResponse): void {
    const previous = this.entries.get(entry.id);
    if (previous) {
      this.entries.delete(entry.id);
      this.release(previous);
    }
    this.entries.set(entry.id, entry);
    this.hold(entry);
    while (this.entries.size > this.maxEntries || this.heldBytes > this.maxBytes) {
      const [oldestId, oldest] = this.entries.entries().next().value!;
      this.entries.delete(oldestId);
      this.release(oldest);
    }
  }

  get size(): number {
    return this.entries.size;
  }

  /** Bytes held: kept responses and the earlier turns they need. */
  get bytes(): number {
    return this.heldBytes;
  }

  private hold(entry: StoredResponse): void {
    for (let at: StoredResponse | null = entry; at; at = at.parent) {
      const held = this.held.get(at);
      if (held) {
        held.refs++;
        return;
      }
      const bytes = Buffer.byteLength(JSON.stringify({ ...at, parent: null }));
      this.held.set(at, { bytes, refs: 1 });
      this.heldBytes += bytes;
    }
  }

  private release(entry: StoredResponse): void {
    for (let at: StoredResponse | null = entry; at; at = at.parent) {
      const held = this.held.get(at);
      if (!held || --held.refs > 0) return;
      this.held.delete(at);
      this.heldBytes -= held.bytes;
    }
  }
}
