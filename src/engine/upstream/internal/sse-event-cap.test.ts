import { describe, expect, test } from "vitest";
import { capEventBytes, SseEventTooLarge } from "./sse-event-cap.js";

/** Feeds `chunks` through the cap and reads everything back. */
async function through(chunks: string[], maxBytes: number): Promise<string> {
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const text of chunks) controller.enqueue(encoder.encode(text));
      controller.close();
    },
  });
  let out = "";
  for await (const part of capEventBytes(body, maxBytes).pipeThrough(new TextDecoderStream())) out += part;
  return out;
}

describe("capEventBytes", () => {
  test("passes a stream of events each under the cap unchanged, whatever its total size", async () => {
    const event = "data: 0123456789\n\n";
    const crlf = "data: 0123456789\r\n\r\n";
    const chunks = [...Array.from({ length: 50 }, () => event), crlf, "data: 01234", "56789\r", "\n\r\n"];
    expect(await through(chunks, 16)).toBe(chunks.join(""));
  });

  test("errors once one event's lines add up past the cap, even split across chunks", async () => {
    const error = await through(["data: 0123", "4567\ndata: 89\n"], 16).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SseEventTooLarge);
    expect((error as SseEventTooLarge).maxBytes).toBe(16);
  });

  test("errors on a line that never ends", async () => {
    const error = await through(["data: ", "x".repeat(100)], 64).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SseEventTooLarge);
  });
});
