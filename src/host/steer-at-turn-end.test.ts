import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { agentHarness } from "../agent/test-support/agent-harness.js";
import type { ThreadEvent } from "../protocol/agent.js";
import { AgentHost } from "./agent-host.js";
import { connectHost, type HostTestEvent } from "./test-support/host-client.js";
import {
  echoScript,
  manyWords,
  type ScriptedStack,
  startScriptedStack,
} from "./test-support/scripted-stack.js";

/**
 * A `turn.steer` that crosses its turn's end is answered exactly once: `turn.steered` while the
 * turn runs, otherwise the next turn starts with it (`turn.started` carrying its input). The steering
 * soak once reported such a steer as unanswered (SmolLM2, agent host, seed 827740011): the turn had
 * ended after 5 deltas, the steer started the next turn, and the soak did not count `turn.started`
 * as an answer. These tests pin the moments around a turn's end without timing.
 */
let stack: ScriptedStack;

beforeAll(async () => {
  stack = await startScriptedStack({
    script: echoScript(manyWords(40)),
    tokensPerSecond: 2000,
    host: ({ newThread }) =>
      new AgentHost({
        create: async () => newThread(),
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

const answers = (events: HostTestEvent[], input: string) =>
  events.filter(
    (e) =>
      e.type === "error" ||
      ((e.type === "turn.steered" || e.type === "turn.queued" || e.type === "turn.started") &&
        e.input === input),
  );

describe("a turn.steer at its turn's end", () => {
  test("sent the moment turn.completed arrives, it starts the next turn (answered once, never silent)", async () => {
    const c = await connectHost(stack.agentUrl);
    c.send({ type: "thread.start", request_id: "start" });
    const threadId = String((await c.next((e) => e.type === "ack" && e.request_id === "start")).thread_id);
    // From the socket's own message handler, before any other frame is read: the earliest a face can.
    c.ws.on("message", (data) => {
      const event = JSON.parse(String(data)) as HostTestEvent;
      if (event.type === "turn.completed" && c.events.filter((e) => e.type === "turn.completed").length <= 1)
        c.send({ type: "turn.steer", thread_id: threadId, input: "then a dog came by" });
    });
    c.send({ type: "turn.start", thread_id: threadId, input: "hello", request_id: "t1" });
    const first = String((await c.next((e) => e.type === "ack" && e.request_id === "t1")).turn_id);
    const answer = await c.next((e) => answers([e], "then a dog came by").length > 0);
    expect(answer).toMatchObject({ type: "turn.started", input: "then a dog came by" });
    expect(answer.turn_id).not.toBe(first);
    await c.next((e) => e.type === "turn.completed" && e.turn_id === answer.turn_id);
    // A round trip: anything late would have arrived by now.
    c.send({ type: "thread.list", request_id: "ping" });
    await c.next((e) => e.type === "ack" && e.request_id === "ping");
    expect(answers(c.events, "then a dog came by")).toHaveLength(1);
    const messages = c.events.filter(
      (e) => e.type === "item.completed" && (e.item as { type: string }).type === "agent_message",
    );
    expect(messages.map((e) => (e.item as { text: string }).text)).toEqual([
      "echo: hello",
      "echo: then a dog came by",
    ]);
    c.ws.close();
  });

  test("sent with the reply's last delta, it is answered once and reaches the model in that turn or the next", async () => {
    const c = await connectHost(stack.agentUrl);
    c.send({ type: "thread.start", request_id: "start" });
    const threadId = String((await c.next((e) => e.type === "ack" && e.request_id === "start")).thread_id);
    let steered = false;
    c.ws.on("message", (data) => {
      const event = JSON.parse(String(data)) as HostTestEvent;
      if (event.type === "item.delta" && !steered) {
        steered = true;
        c.send({ type: "turn.steer", thread_id: threadId, input: "shorter" });
      }
    });
    c.send({ type: "turn.start", thread_id: threadId, input: "hi", request_id: "t1" });
    // "echo: hi" streams in a few deltas: the steer meets the reply's end on the wire.
    await c.next((e) => answers([e], "shorter").length > 0);
    await c.next(
      (e) => e.type === "item.completed" && (e.item as { text?: string }).text === "echo: shorter",
    );
    c.send({ type: "thread.list", request_id: "ping" });
    await c.next((e) => e.type === "ack" && e.request_id === "ping");
    expect(answers(c.events, "shorter")).toHaveLength(1);
    const ends = c.events.filter((e) => e.type === "turn.completed");
    expect(ends.every((e) => e.status === "completed")).toBe(true);
    expect(new Set(ends.map((e) => e.turn_id)).size).toBe(ends.length);
    c.ws.close();
  });
});

describe("a turn started by a turn.completed listener", () => {
  test("two turns at once: the turn that ended does not also start what was queued behind the listener's turn", async () => {
    await using h = await agentHarness({}, { script: echoScript(manyWords(40)), tokensPerSecond: 2000 });
    const running: string[] = [];
    let most = 0;
    h.thread.on((event: ThreadEvent) => {
      if (event.type === "turn.started") running.push(event.turn_id);
      if (event.type === "turn.completed") running.splice(running.indexOf(event.turn_id), 1);
      most = Math.max(most, running.length);
    });
    const firstDelta = h.next("item.delta");
    const first = h.thread.startTurn("one");
    await firstDelta;
    h.thread.enqueue("three");
    let listened = false;
    const off = h.thread.on((event) => {
      // The thread is idle as `turn.completed` goes out: a listener may start the next turn at once.
      if (event.type !== "turn.completed" || listened) return;
      listened = true;
      h.thread.steer("two");
    });
    // The first turn's promise still covers everything after it.
    await first;
    off();
    expect(h.thread.busy).toBe(false);
    expect(most).toBe(1);
    const started = h.events.flatMap((e) => (e.type === "turn.started" ? [e.input] : []));
    expect(started.toSorted()).toEqual(["one", "three", "two"]);
    expect(started.filter((input) => input === "three")).toHaveLength(1);
    expect(h.events.filter((e) => e.type === "turn.completed")).toHaveLength(3);
  });
});
