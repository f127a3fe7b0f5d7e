import { CodedError } from "../../../protocol/errors.js";

/** An upstream sent one server-sent event (or one line) longer than the cap. */
export class SseEventTooLarge extends CodedError<"event_too_large"> {
  constructor(readonly maxBytes: number) {
    super("event_too_large", `an event longer than ${maxBytes} bytes`);
    this.name = "SseEventTooLarge";
  }
}

const LF = 10;
const CR = 13;

/**
 * Passes a `text/event-stream` body through unchanged while no event (the bytes between two blank
 * lines, line ends not counted) grows past `maxBytes`; errors the stream with
 * {@link SseEventTooLarge} as soon as one does, so the parser behind it never buffers more.
 */
export function capEventBytes(
  body: ReadableStream<Uint8Array>,
  maxBytes: number,
): ReadableStream<Uint8Array> {
  let eventBytes = 0;
  let lineBytes = 0;
  let afterCr = false;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        for (const byte of chunk) {
          if (byte === LF && afterCr) {
            // The second half of a CRLF: the line already ended.
            afterCr = false;
            continue;
          }
          afterCr = byte === CR;
          if (byte === LF || byte === CR) {
            if (lineBytes === 0) eventBytes = 0;
            lineBytes = 0;
          } else {
            lineBytes++;
            if (++eventBytes > maxBytes) {
              controller.error(new SseEventTooLarge(maxBytes));
              return;
            }
          }
        }
        controller.enqueue(chunk);
      },
    }),
  );
}
