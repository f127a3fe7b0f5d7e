import { ScriptedEngine } from "../../engine/scripted/scripted-engine.js";
import type { ResponseStream, ServerEvent } from "../response-stream.js";

/** A reply long enough that a test always acts while it is still streaming. */
export const LONG_REPLY = Array.from({ length: 2000 }, (_, i) => `w${i}`).join(" ");

/** Text the scripted model answers to the steer input "use tabs". */
export const STEERED_REPLY = "OK, tabs.";

/**
 * Streams {@link LONG_REPLY} at 200 tokens/s, except that a conversation whose last message is
 * "use tabs" (a steer) gets {@link STEERED_REPLY}.
 */
export function steerableEngine(): ScriptedEngine {
  return new ScriptedEngine({
    tokensPerSecond: 200,
    script: (request) => {
      const last = request.messages.at(-1);
      return { text: last?.role === "user" && last.content === "use tabs" ? STEERED_REPLY : LONG_REPLY };
    },
  });
}

/** Every event of the stream until it ends (rethrows what the stream throws). */
export async function collect(stream: ResponseStream): Promise<ServerEvent[]> {
  const events: ServerEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

/** Reads events until `match`, leaving the rest of the stream unread. */
export async function readUntil(
  iterator: AsyncIterator<ServerEvent>,
  match: (event: ServerEvent) => boolean,
): Promise<ServerEvent[]> {
  const events: ServerEvent[] = [];
  for (;;) {
    const next = await iterator.next();
    if (next.done) throw new Error(`The stream ended before the awaited event (${events.length} read).`);
    events.push(next.value);
    if (match(next.value)) return events;
  }
}

export function deltas(events: readonly ServerEvent[]): string {
  return events.map((event) => (event.type === "response.output_text.delta" ? event.delta : "")).join("");
}

export function types(events: readonly ServerEvent[]): string[] {
  return events.map((event) => event.type);
}
