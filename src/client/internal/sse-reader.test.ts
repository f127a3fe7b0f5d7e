import { describe, expect, test } from "vitest";
import { readSse, type SseMessage } from "./sse-reader.js";

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

async function read(chunks: string[]): Promise<SseMessage[]> {
  const messages: SseMessage[] = [];
  for await (const message of readSse(body(chunks))) messages.push(message);
  return messages;
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
});
