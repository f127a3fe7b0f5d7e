import { CodedError } from "../../protocol/errors.js";

/** One server-sent event: its `event:` name (if any) and its `data:` lines joined by newlines. */
export interface SseMessage {
  event: string | undefined;
  data: string;
}

/** A server sent one event (or one line) longer than the reader's cap. */
export class SseEventTooLarge extends CodedError<"event_too_large"> {
  constructor(readonly maxBytes: number) {
    super("event_too_large", `an event longer than ${maxBytes} bytes`);
    this.name = "SseEventTooLarge";
  }
}

export interface ReadSseOptions {
  /**
   * Largest event, in bytes of its lines (line ends not counted); a longer one, or a line that
   * never ends, throws {@link SseEventTooLarge} as soon as it passes the cap. Default: 16 MiB.
   */
  maxEventBytes?: number;
}

const DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024;
const LF = 10;
const CR = 13;

/**
 * Parses a `text/event-stream` body as it arrives (the WHATWG rules: LF, CR or CRLF line ends,
 * `:` comments, one optional space after the colon, an event dispatched by a blank line). Each
 * byte is looked at once: a line is kept as the chunks it arrived in until its end, then decoded
 * (a line end is never inside a UTF-8 sequence). Returning early cancels the body.
 */
export async function* readSse(
  body: ReadableStream<Uint8Array>,
  options: ReadSseOptions = {},
): AsyncGenerator<SseMessage> {
  const maxBytes = options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
  const reader = body.getReader();
  // A byte order mark is dropped once, at the start of the stream, not at the start of each line.
  const decoder = new TextDecoder("utf-8", { ignoreBOM: true });
  let first = true;
  /** The current line's bytes so far, as they arrived. */
  let pieces: Uint8Array[] = [];
  /** Bytes of the current event's lines, the current line's so far included. */
  let eventBytes = 0;
  /** The last byte seen was a CR: an LF right after it ends no second line. */
  let afterCr = false;
  let event: string | undefined;
  let data: string[] = [];
  try {
    for (;;) {
      const { value: chunk, done } = await reader.read();
      if (done) return;
      let start = 0;
      for (let i = 0; i < chunk.length; i++) {
        const byte = chunk[i]!;
        if (byte !== LF && byte !== CR) continue;
        const skip = byte === LF && afterCr && i === start && pieces.length === 0;
        afterCr = byte === CR;
        if (skip) {
          start = i + 1;
          continue;
        }
        eventBytes += i - start;
        if (eventBytes > maxBytes) throw new SseEventTooLarge(maxBytes);
        pieces.push(chunk.subarray(start, i));
        start = i + 1;
        let line = decodeLine(decoder, pieces);
        pieces = [];
        if (first && line.startsWith("\uFEFF")) line = line.slice(1);
        first = false;
        if (line === "") {
          eventBytes = 0;
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
      if (start < chunk.length) {
        afterCr = false;
        eventBytes += chunk.length - start;
        if (eventBytes > maxBytes) throw new SseEventTooLarge(maxBytes);
        pieces.push(chunk.slice(start));
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

function decodeLine(decoder: InstanceType<typeof TextDecoder>, pieces: Uint8Array[]): string {
  if (pieces.length === 1) return decoder.decode(pieces[0]);
  const line = new Uint8Array(pieces.reduce((sum, piece) => sum + piece.length, 0));
  let at = 0;
  for (const piece of pieces) {
    line.set(piece, at);
    at += piece.length;
  }
  return decoder.decode(line);
}
