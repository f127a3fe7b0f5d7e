/**
 * The `data:` payloads of a streamed response body, each with the client-side time its chunk
 * arrived (`[DONE]` left out).
 */
export async function* sseData(
  body: AsyncIterable<Uint8Array>,
): AsyncGenerator<{ data: string; at: number }> {
  let buffer = "";
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    const at = performance.now();
    buffer += decoder.decode(chunk, { stream: true });
    const lines = buffer.split("\n");
    buffer = lines.pop()!;
    for (const line of lines) {
      if (line.startsWith("data: ") && line !== "data: [DONE]") yield { data: line.slice(6), at };
    }
  }
}
