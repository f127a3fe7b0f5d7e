import { sseData } from "./sse-lines.js";

export interface Streamed {
  sentAt: number;
  /** Arrival of the first output chunk: answer text, reasoning or a tool call's arguments. */
  firstAt: number;
  /** Arrival of the last output chunk. */
  lastAt: number;
  /** Completion tokens, from the usage chunk. */
  tokens: number;
  /** The answer text (tool calls and reasoning are not part of it). */
  text: string;
  /** llama-server's `timings` of the last chunk that had them (draft counts among them). */
  timings?: { draft_n?: number; draft_n_accepted?: number };
  /** Prompt tokens, from the usage chunk. */
  promptTokens: number;
  /** Prompt tokens whose KV state was reused, from the usage chunk. */
  cachedTokens: number;
}

type Chunk = {
  choices?: {
    delta?: {
      content?: string | null;
      reasoning_content?: string | null;
      tool_calls?: { function?: { arguments?: string } }[];
    };
  }[];
  usage?: {
    completion_tokens?: number;
    prompt_tokens?: number;
    prompt_tokens_details?: { cached_tokens?: number };
  } | null;
  timings?: Streamed["timings"];
};

/**
 * A streamed Chat Completion (`body` plus `stream: true` and usage); times are client-side, at each
 * output chunk's arrival.
 */
export async function streamChat(baseUrl: string, body: Record<string, unknown>): Promise<Streamed> {
  const sentAt = performance.now();
  const response = await fetch(`${baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } }),
  });
  if (!response.ok || !response.body) {
    throw new Error(
      `bench: ${baseUrl} answered ${response.status}: ${(await response.text()).slice(0, 500)}`,
    );
  }
  const streamed: Streamed = {
    sentAt,
    firstAt: 0,
    lastAt: 0,
    tokens: 0,
    text: "",
    promptTokens: 0,
    cachedTokens: 0,
  };
  for await (const { data: line, at: now } of sseData(response.body)) {
    const data = JSON.parse(line) as Chunk;
    const delta = data.choices?.[0]?.delta;
    const output =
      (delta?.content ?? "") +
      (delta?.reasoning_content ?? "") +
      (delta?.tool_calls ?? []).map((call) => call.function?.arguments ?? "").join("");
    if (output) {
      if (streamed.firstAt === 0) streamed.firstAt = now;
      streamed.lastAt = now;
    }
    if (delta?.content) streamed.text += delta.content;
    if (data.usage?.completion_tokens !== undefined) streamed.tokens = data.usage.completion_tokens;
    if (data.usage?.prompt_tokens !== undefined) streamed.promptTokens = data.usage.prompt_tokens;
    const cached = data.usage?.prompt_tokens_details?.cached_tokens;
    if (cached !== undefined) streamed.cachedTokens = cached;
    if (data.timings) streamed.timings = data.timings;
  }
  if (streamed.firstAt === 0) streamed.firstAt = streamed.lastAt = performance.now();
  return streamed;
}
