import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { call } from "../agent/test-support/scripted-replies.js";
import type { Script } from "../engine/scripted/scripted-engine.js";
import { AgentHost } from "./agent-host.js";
import { connectHost, type HostTestClient, type HostTestEvent } from "./test-support/host-client.js";
import { type ScriptedStack, startScriptedStack } from "./test-support/scripted-stack.js";

const PATCH = "*** Begin Patch\n*** Add File: made.txt\n+made\n*** End Patch";

let stack: ScriptedStack;
// "edit…" asks for a new file, "run…" for a command; anything else is answered in words.
const script: Script = (request) => {
  const last = request.messages.at(-1);
  if (last?.role === "tool") return { text: `saw: ${last.content}` };
  const text = last?.role === "user" ? last.content : "";
  if (text.startsWith("edit")) return call("apply_patch", { patch: PATCH });
  if (text.startsWith("run")) return call("shell", { command: "touch ran.txt" });
  return { text: "ok" };
};

beforeAll(async () => {
  stack = await startScriptedStack({
    script,
    tokensPerSecond: 1000,
    host: ({ newThread }) =>
      new AgentHost({
        create: async () => newThread({ approvalPolicy: "auto" }),
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

async function turn(c: HostTestClient, id: string, body: object): Promise<HostTestEvent[]> {
  const from = c.events.length;
  expect(await request(c, id, body)).toMatchObject({ type: "ack" });
  await c.next((e) => e.type === "turn.completed", from);
  return c.events.slice(from);
}

const calls = (events: HostTestEvent[]) =>
  events.flatMap((e) => {
    const item = e.item as { type: string; name?: string; status?: string; output?: string } | undefined;
    return e.type === "item.completed" && item?.type === "tool_call" ? [item] : [];
  });

describe("agent host: plan mode", () => {
  test("turn.start and thread.set_mode take a mode; other values are refused as invalid_event", async () => {
    const c = await connectHost(stack.agentUrl);
    const started = await request(c, "s", { type: "thread.start" });
    const thread_id = started.thread_id as string;
    for (const [i, mode] of ["Plan", "implement", "", 3, null].entries()) {
      const refused = await request(c, `bad${i}`, { type: "turn.start", thread_id, input: "edit", mode });
      expect(refused).toMatchObject({ type: "error", error: { code: "invalid_event" } });
      const unset = await request(c, `badset${i}`, { type: "thread.set_mode", thread_id, mode });
      expect(unset).toMatchObject({ type: "error", error: { code: "invalid_event" } });
    }
    expect(c.events.some((e) => e.type === "turn.started")).toBe(false);

    // A plan turn: the edit and the command are refused, the model is told why, nothing is written.
    const planned = await turn(c, "p1", {
      type: "turn.start",
      thread_id,
      input: "edit a file",
      mode: "plan",
    });
    const user = planned.find(
      (e) => e.type === "item.completed" && (e.item as { type: string }).type === "user_message",
    );
    expect(user?.item).toMatchObject({ text: "edit a file", mode: "plan" });
    expect(calls(planned)).toMatchObject([
      { name: "apply_patch", status: "failed", output: expect.stringMatching(/^Not run: plan mode is on/) },
    ]);
    // The mode stays the thread's: a turn naming none is a plan turn too.
    const ran = await turn(c, "p2", { type: "turn.start", thread_id, input: "run it" });
    expect(calls(ran)).toMatchObject([{ name: "shell", status: "failed" }]);
    expect(existsSync(path.join(stack.dir, "made.txt"))).toBe(false);
    expect(existsSync(path.join(stack.dir, "ran.txt"))).toBe(false);

    // Switched back, the same edit runs.
    expect(await request(c, "m", { type: "thread.set_mode", thread_id, mode: "default" })).toMatchObject({
      type: "ack",
    });
    const edited = await turn(c, "d1", { type: "turn.start", thread_id, input: "edit a file" });
    expect(calls(edited)).toMatchObject([{ name: "apply_patch", status: "completed" }]);
    expect(await readFile(path.join(stack.dir, "made.txt"), "utf8")).toBe("made\n");
    c.ws.close();
  });
});
