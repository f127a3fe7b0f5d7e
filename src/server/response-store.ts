import type { ChatMessage, ToolChoice, ToolDefinition } from "../protocol/chat.js";
import type { OutputFormat, TextFormat } from "../protocol/output-format.js";

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
  /** Structured output, as the engine applies it. Default: free text. */
  format?: OutputFormat;
  /** `text.format` as the request sent it (echoed in the response object). Default: `{type: "text"}`. */
  textFormat?: TextFormat;
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
   * total fits. A response whose chain is larger than the whole budget is not kept. Default: 256 MiB.
   */
  maxBytes?: number;
  /**
   * A response not stored, continued or read for this long expires (continuing or reading one keeps
   * its earlier turns too). 0: never. Default: 24 hours.
   */
  ttlMs?: number;
}

/** The defaults of {@link ResponseStoreOptions}, shared by every store. */
export const STORE_DEFAULTS = {
  maxEntries: 4096,
  maxBytes: 256 * 1024 * 1024,
  ttlMs: 24 * 60 * 60_000,
} as const;

/**
 * Where `previous_response_id` chains are kept: in this process (the default) or shared by several
 * servers (Redis). Every store keeps the same bounds ({@link ResponseStoreOptions}) and passes the
 * same contract suite; the server does not care which it has.
 */
export interface ResponseStore {
  /**
   * The response with its whole chain (`parent` filled in); undefined when unknown, expired or
   * evicted. Throws `store_unavailable` when the store cannot be reached.
   */
  get(id: string): Promise<StoredResponse | undefined>;
  /**
   * Keeps the response (its earlier turns are the chain it was given); a chain larger than the byte
   * budget is not kept, as if evicted at once. Throws `store_unavailable` when the store cannot be
   * reached.
   */
  put(entry: StoredResponse): Promise<void>;
  /** True when other servers share it: a chain read here may have been run elsewhere. */
  readonly shared: boolean;
  /** What it is, for people (`memory`, `Redis at redis://host:6379/0`); never a password. */
  readonly description: string;
  /** Closes its connections; idempotent. */
  dispose(): Promise<void>;
}

/** The bytes a stored turn counts for in every store: its own fields as JSON, without the chain. */
export function turnJson(entry: StoredResponse): string {
  return JSON.stringify({ ...entry, parent: null });
}
