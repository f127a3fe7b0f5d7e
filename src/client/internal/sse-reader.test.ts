import { describe, expect, test } from "vitest";
import { readSse, SseEventTooLarge, type SseMessage } from "./sse-reader.js";

/** A body delivered in exactly these chunks. */
function body(chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

async function read(chunks: string[], maxEventBytes?: number): Promise<SseMessage[]> {
  const messages: SseMessage[] = [];
  const options = maxEventBytes === undefined ? {} : { maxEventBytes };
  for await (const message of readSse(body(chunks), options)) messages.push(message);
  return messages;
}

/** `text` cut into chunks of `size` characters. */
function chunked(text: string, size: number): string[] {
  const chunks: string[] = [];
  for (let at = 0; at < text.length; at += size) chunks.push(text.slice(at, at + size));
  return chunks;
}

describe("readSse", () => {
  test("event names, data lines, comments and the optional space", async () => {
    expect(await read([': hello\n\nevent: a\ndata: {"x":1}\n\ndata:two\ndata: lines\n\n'])).toEqual([
      { event: "a", data: '{"x":1}' },
      { event: undefined, data: "two\nlines" },
    ]);
  });

  test("events split anywhere across chunks, with CRLF, CR or LF line ends", async () => {
    const text = "event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\rdata: 3\n\n";
    const expected = [
      { event: "a", data: "1" },
      { event: "b", data: "2" },
      { event: undefined, data: "3" },
    ];
    for (let cut = 0; cut <= text.length; cut++) {
      expect(await read([text.slice(0, cut), text.slice(cut)])).toEqual(expected);
    }
    expect(await read([...text])).toEqual(expected);
  });

  test("multi-byte characters split between chunks survive", async () => {
    const bytes = new TextEncoder().encode("data: héllo ✓\n\n");
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const byte of bytes) controller.enqueue(new Uint8Array([byte]));
        controller.close();
      },
    });
    const messages: SseMessage[] = [];
    for await (const message of readSse(stream)) messages.push(message);
    expect(messages).toEqual([{ event: undefined, data: "héllo ✓" }]);
  });

  test("an event without its blank line at the end is dropped", async () => {
    expect(await read(["data: complete\n\ndata: cut off\n"])).toEqual([
      { event: undefined, data: "complete" },
    ]);
  });

  test("a byte order mark is dropped at the start of the stream only", async () => {
    expect(await read(["\uFEFFdata: a\n\ndata: \uFEFFb\n\n"])).toEqual([
      { event: undefined, data: "a" },
      { event: undefined, data: "\uFEFFb" },
    ]);
  });

  test("a line or an event past the cap is an error, however it is chunked; one at the cap is not", async () => {
    const over = read(["data: ", "x".repeat(100)], 64);
    await expect(over).rejects.toBeInstanceOf(SseEventTooLarge);
    await expect(over).rejects.toMatchObject({ code: "event_too_large", maxBytes: 64 });
    // Two lines of one event add up (line ends not counted); a blank line starts the count again.
    await expect(read(["data: 0123", "4567\ndata: 89\n"], 16)).rejects.toBeInstanceOf(SseEventTooLarge);
    const atCap = "data: 0123456789\r\n\r\n";
    expect(await read(chunked(atCap.repeat(50), 7), 16)).toHaveLength(50);
    // The default cap: a line that never ends stops the reader instead of growing without bound.
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(new Uint8Array(1 << 20).fill(0x78));
      },
    });
    const reading = (async () => {
      for await (const _ of readSse(endless)) return "an event";
      return "the end";
    })();
    await expect(reading).rejects.toMatchObject({ maxBytes: 16 * 1024 * 1024 });
  });

  test("many small events parse the same in any chunking, and a long line split finely stays whole", async () => {
    const expected: SseMessage[] = [];
    let text = "";
    for (let i = 0; i < 5000; i++) {
      const message = { event: i % 3 === 0 ? "tick" : undefined, data: `{"i":${i},"s":"é✓"}` };
      expected.push(message);
      text += `${message.event ? `event: ${message.event}\n` : ""}data: ${message.data}\n\n`;
    }
    for (const size of [1, 13, 4096, text.length]) expect(await read(chunked(text, size))).toEqual(expected);
    const long = "y".repeat(1 << 20);
    expect(await read([...chunked(`data: ${long}`, 512), "\n\n"])).toEqual([
      { event: undefined, data: long },
    ]);
  });
});
