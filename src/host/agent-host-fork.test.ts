import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { ThreadInfo, ThreadItem } from "../protocol/agent.js";
import { AgentHost } from "./agent-host.js";
import { connectHost, type HostTestClient, type HostTestEvent } from "./test-support/host-client.js";
import { type ScriptedStack, startScriptedStack } from "./test-support/scripted-stack.js";

let stack: ScriptedStack;
const forks: { info: ThreadInfo; items: ThreadItem[] }[] = [];

beforeAll(async () => {
  stack = await startScriptedStack({
    // The answer names every user message the model was sent: the history it saw.
    script: (request) => {
      const users = request.messages.flatMap((m) => (m.role === "user" ? [m.content] : []));
      if (users.at(-1) === "slow") return { text: Array.from({ length: 300 }, (_, i) => `w${i}`).join(" ") };
      return { text: `saw ${users.join("|")}` };
    },
    tokensPerSecond: 200,
    host: ({ newThread }) =>
      new AgentHost({
        create: async () => newThread(),
        resume: async () => null,
        fork: async (info, items) => {
          forks.push({ info, items });
          return newThread({ resume: { thread: info, items } });
        },
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

async function turn(c: HostTestClient, threadId: string, input: string): Promise<void> {
  const done = c.next((e) => e.type === "turn.completed" && e.thread_id === threadId);
  expect(
    (await request(c, `turn-${c.events.length}`, { type: "turn.start", thread_id: threadId, input })).type,
  ).toBe("ack");
  await done;
}

const itemsOf = (c: HostTestClient, threadId: string) =>
  c.events
    .filter((e) => e.type === "item.completed" && e.thread_id === threadId)
    .map((e) => e.item as ThreadItem);

describe("thread.fork", () => {
  test("a fork from a middle turn holds the items up to it and answers from that history alone", async () => {
    const c = await connectHost(stack.agentUrl);
    const parentId = (await request(c, "start", { type: "thread.start" })).thread_id as string;
    await turn(c, parentId, "one");
    await turn(c, parentId, "two");
    await turn(c, parentId, "three");
    const parentItems = itemsOf(c, parentId);
    const second = parentItems.filter((item) => item.type === "user_message")[1]!;

    const started = c.next((e) => e.type === "thread.started" && e.thread_id !== parentId);
    const history = c.next((e) => e.type === "thread.history" && e.thread_id !== parentId);
    const ack = await request(c, "fork", { type: "thread.fork", thread_id: parentId, item_id: second.id });
    expect(ack.type).toBe("ack");
    const forkId = ack.thread_id as string;
    expect(forkId).not.toBe(parentId);
    const info = (await started).thread as ThreadInfo;
    expect(info.id).toBe(forkId);
    expect(info.title).toMatch(/^Fork of /);
    // Items up to and including the second turn: its user message and the answer to it.
    const kept = parentItems.slice(0, parentItems.indexOf(second) + 2);
    expect((await history).items).toEqual(kept);
    expect(kept.at(-1)).toMatchObject({ type: "agent_message", text: "saw one|two" });

    await turn(c, forkId, "four");
    expect(itemsOf(c, forkId).at(-1)).toMatchObject({ type: "agent_message", text: "saw one|two|four" });
    // The parent goes on from its own history.
    await turn(c, parentId, "five");
    expect(itemsOf(c, parentId).at(-1)).toMatchObject({
      type: "agent_message",
      text: "saw one|two|three|five",
    });

    // Without item_id the whole conversation is forked.
    const whole = await request(c, "fork-all", { type: "thread.fork", thread_id: parentId });
    expect(whole.type).toBe("ack");
    expect(forks.at(-1)!.items).toEqual(itemsOf(c, parentId));
    c.ws.close();
  });

  test("refused for an unknown item, an item that starts no turn, an unknown thread and while a turn runs", async () => {
    const c = await connectHost(stack.agentUrl);
    const id = (await request(c, "start", { type: "thread.start" })).thread_id as string;
    const fork = (fields: object) => request(c, `f-${c.events.length}`, { type: "thread.fork", ...fields });
    expect((await fork({ thread_id: id })).error).toMatchObject({
      code: "invalid_request",
      param: "thread_id",
    });
    await turn(c, id, "one");
    const answer = itemsOf(c, id).find((item) => item.type === "agent_message")!;
    const before = forks.length;

    expect((await fork({ thread_id: id, item_id: "msg_none" })).error).toMatchObject({
      code: "not_found",
      param: "item_id",
    });
    expect((await fork({ thread_id: id, item_id: answer.id })).error).toMatchObject({
      code: "invalid_request",
      param: "item_id",
    });
    expect((await fork({ thread_id: "thr_none" })).error).toMatchObject({
      code: "not_found",
      param: "thread_id",
    });
    expect((await fork({ thread_id: id, item_id: "" })).error).toMatchObject({ code: "invalid_event" });

    const running = c.next((e) => e.type === "item.delta" && e.thread_id === id);
    c.send({ type: "turn.start", thread_id: id, input: "slow" });
    await running;
    expect((await fork({ thread_id: id })).error).toMatchObject({
      code: "invalid_request",
      param: "thread_id",
    });
    expect(forks.length).toBe(before);
    c.send({ type: "turn.interrupt", thread_id: id });
    c.ws.close();
  });
});
