import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { MAX_COMPACT_FOCUS } from "../protocol/agent-requests.js";
import { AgentHost } from "./agent-host.js";
import { connectHost, type HostTestClient, type HostTestEvent } from "./test-support/host-client.js";
import {
  echoScript,
  manyWords,
  type ScriptedStack,
  startScriptedStack,
} from "./test-support/scripted-stack.js";

let stack: ScriptedStack;

beforeAll(async () => {
  stack = await startScriptedStack({
    script: echoScript(manyWords(400)),
    // "long" streams for about a second: a request sent right after its start finds it running.
    tokensPerSecond: 400,
    host: ({ newThread }) =>
      new AgentHost({
        create: async () => newThread({ contextBudget: 4096, compactAt: 0.5, allowedTools: [] }),
        resume: async () => null,
        list: async () => [],
        rename: async () => null,
        remove: async () => false,
      }),
  });
});

afterAll(async () => {
  await stack.close();
});

async function request(c: HostTestClient, id: string, body: object): Promise<HostTestEvent> {
  const answer = c.next((e) => (e.type === "ack" || e.type === "error") && e.request_id === id);
  c.send({ ...body, request_id: id });
  return answer;
}

async function turn(c: HostTestClient, thread: string, input: string): Promise<void> {
  const ack = await request(c, `turn-${c.events.length}`, { type: "turn.start", thread_id: thread, input });
  await c.next((e) => e.type === "turn.completed" && e.turn_id === ack.turn_id, 0);
}

const contexts = (c: HostTestClient) => c.events.filter((e) => e.type === "context.updated");

describe("agent host: the context meter on the wire", () => {
  test("context.updated follows each model response, stamped, with the turn's usage; thread.compact answers with a notice and the compacted size", async () => {
    const c = await connectHost(stack.agentUrl);
    const started = await request(c, "start", { type: "thread.start" });
    const thread = started.thread_id as string;
    await turn(c, thread, "hello");
    const [first] = contexts(c);
    const completed = c.events.find((e) => e.type === "turn.completed")!;
    const stats = completed.stats as { inputTokens: number; outputTokens: number };
    expect(first).toEqual({
      type: "context.updated",
      turn_id: completed.turn_id,
      context: {
        used_tokens: stats.inputTokens + stats.outputTokens,
        window_tokens: 4096,
        compact_at_tokens: 2048,
      },
      thread_id: thread,
      seq: expect.any(Number),
      epoch: expect.any(String),
    });
    await turn(c, thread, "long");
    await turn(c, thread, "again");
    const before = contexts(c).at(-1)!.context as { used_tokens: number };

    const from = c.events.length;
    const ack = await request(c, "compact", { type: "thread.compact", thread_id: thread, focus: "w1" });
    expect(ack.type).toBe("ack");
    const notice = c.events
      .slice(from)
      .find((e) => e.type === "item.completed" && (e.item as { type: string }).type === "notice");
    const text = (notice!.item as { text: string }).text;
    const [, was, now] = /^Context compacted: ([\d,]+) -> ([\d,]+) tokens\.$/.exec(text)!;
    expect(Number(was!.replaceAll(",", ""))).toBe(before.used_tokens);
    const after = c.events.slice(from).find((e) => e.type === "context.updated")!;
    expect(after).not.toHaveProperty("turn_id");
    expect(after.context).toEqual({
      used_tokens: Number(now!.replaceAll(",", "")),
      window_tokens: 4096,
      compact_at_tokens: 2048,
    });
    // Both came before the ack, like every event that answers a request.
    expect(c.events.indexOf(after)).toBeLessThan(c.events.indexOf(ack));

    // A reconnecting client gets the meter back with the thread's events.
    const again = await connectHost(stack.agentUrl);
    await request(again, "resume", { type: "thread.resume", thread_id: thread, after_seq: -1 });
    await again.next((e) => e.type === "context.updated" && e.seq === after.seq, 0);
    c.ws.close();
    again.ws.close();
  });

  test("thread.compact is refused while a turn runs, for an unknown thread, and with a focus too long", async () => {
    const c = await connectHost(stack.agentUrl);
    const started = await request(c, "start", { type: "thread.start" });
    const thread = started.thread_id as string;
    const unknown = await request(c, "nobody", { type: "thread.compact", thread_id: "thr_nobody" });
    expect(unknown).toMatchObject({ type: "error", error: { code: "not_found" } });
    const long = await request(c, "long-focus", {
      type: "thread.compact",
      thread_id: thread,
      focus: "x".repeat(MAX_COMPACT_FOCUS + 1),
    });
    expect(long).toMatchObject({ type: "error", status: 400, error: { code: "invalid_event" } });
    const ack = await request(c, "turn", { type: "turn.start", thread_id: thread, input: "long" });
    const busy = await request(c, "busy", { type: "thread.compact", thread_id: thread });
    expect(busy).toMatchObject({ type: "error", error: { code: "response_in_progress" } });
    await c.next((e) => e.type === "turn.completed" && e.turn_id === ack.turn_id, 0);
    c.ws.close();
  });
});
