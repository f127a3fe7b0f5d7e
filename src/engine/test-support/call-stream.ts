import { expect } from "vitest";
import type { ToolCall } from "../../protocol/chat.js";
import type { EngineEvent } from "../engine.js";

/**
 * Checks a finished stream against the engine contract for calls: a `tool_call_delta` belongs to
 * a started call; a started call ends in one `tool_call` under its id whose arguments are exactly
 * its deltas joined (unless `cancelled`, when it may end without one); a call sent whole has no
 * start. Returns the finished calls, in order, with the deltas each streamed.
 */
export function expectWellFormedCalls(
  events: readonly EngineEvent[],
  options: { cancelled?: boolean } = {},
): { call: ToolCall; deltas: string[] }[] {
  const open = new Map<string, { name: string; deltas: string[] }>();
  const finished: { call: ToolCall; deltas: string[] }[] = [];
  for (const event of events) {
    if (event.type === "tool_call_start") {
      expect(open.has(event.callId), `call ${event.callId} started twice`).toBe(false);
      open.set(event.callId, { name: event.name, deltas: [] });
    } else if (event.type === "tool_call_delta") {
      const call = open.get(event.callId);
      expect(call, `a delta of call ${event.callId}, which has not started`).toBeDefined();
      call?.deltas.push(event.delta);
    } else if (event.type === "tool_call") {
      const call = open.get(event.call.callId);
      open.delete(event.call.callId);
      if (call) {
        expect(event.call.name).toBe(call.name);
        expect(call.deltas.join("")).toBe(event.call.arguments);
      }
      finished.push({ call: event.call, deltas: call?.deltas ?? [] });
    }
  }
  if (!options.cancelled) expect([...open.keys()], "calls started and never finished").toEqual([]);
  return finished;
}
