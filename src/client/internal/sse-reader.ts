/** One server-sent event: its `event:` name (if any) and its `data:` lines joined by newlines. */
export interface SseMessage {
  event: string | undefined;
  data: string;
}

/**
 * Parses a `text/event-stream` body as it arrives (the WHATWG rules: LF, CR or CRLF line ends,
 * `:` comments, one optional space after the colon, an event dispatched by a blank line).
 * Returning early cancels the body.
 */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let event: string | undefined;
  let data: string[] = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let start = 0;
      for (;;) {
        const end = lineEnd(buffer, start);
        if (end === -1) break;
        // A CR at the very end may be the first half of a CRLF still in flight.
        if (buffer[end] === "\r" && end === buffer.length - 1) break;
        const line = buffer.slice(start, end);
        start = end + (buffer[end] === "\r" && buffer[end + 1] === "\n" ? 2 : 1);
        if (line === "") {
          if (data.length > 0) yield { event, data: data.join("\n") };
          event = undefined;
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon === -1 ? line : line.slice(0, colon);
        let fieldValue = colon === -1 ? "" : line.slice(colon + 1);
        if (fieldValue.startsWith(" ")) fieldValue = fieldValue.slice(1);
        if (field === "event") event = fieldValue;
        else if (field === "data") data.push(fieldValue);
      }
      buffer = buffer.slice(start);
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

function lineEnd(text: string, from: number): number {
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 10 || c === 13) return i;
  }
  return -1;
}
