import { sseData } from "./sse-lines.js";

/** What a streamed `/completion` of llama-server gave: client-side times and its own prompt count. */
export interface StreamedCompletion {
  /** Arrival of the first chunk with output text. */
  firstAt: number;
  /** Prompt tokens llama-server evaluated (`timings.prompt_n` of the last chunk). */
  promptTokens: number;
}

type CompletionChunk = { content?: string; timings?: { prompt_n?: number } };

/**
 * A streamed llama-server `/completion` of `tokens` as they are (no chat template, nothing cached):
 * the same prompt, token for token, that Spark evaluates.
 */
export async function streamCompletion(
  baseUrl: string,
  tokens: readonly number[],
  maxTokens: number,
): Promise<StreamedCompletion> {
  const origin = baseUrl.replace(/\/v1\/?$/, "");
  const response = await fetch(`${origin}/completion`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      prompt: tokens,
      n_predict: maxTokens,
      temperature: 0,
      stream: true,
      cache_prompt: false,
    }),
  });
  if (!response.ok || !response.body) {
    throw new Error(
      `bench: ${origin}/completion answered ${response.status}: ${(await response.text()).slice(0, 500)}`,
    );
  }
  const streamed: StreamedCompletion = { firstAt: 0, promptTokens: 0 };
  for await (const { data: line, at } of sseData(response.body)) {
    const data = JSON.parse(line) as CompletionChunk;
    if (data.content && streamed.firstAt === 0) streamed.firstAt = at;
    if (data.timings?.prompt_n !== undefined) streamed.promptTokens = data.timings.prompt_n;
  }
  if (streamed.firstAt === 0) streamed.firstAt = performance.now();
  return streamed;
}
