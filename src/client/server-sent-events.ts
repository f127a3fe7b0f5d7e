/** The SSE parser the client uses, for other layers that read event streams (the upstream engine). */
export { type ReadSseOptions, readSse, SseEventTooLarge, type SseMessage } from "./internal/sse-reader.js";
