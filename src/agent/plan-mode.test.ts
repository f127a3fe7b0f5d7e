import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { HOST_REQUEST_SCHEMAS } from "../protocol/agent-requests.js";
import { historyFromItems } from "./conversation-history.js";
import { PLAN_MODE_NOTE } from "./plan-mode.js";
import { agentHarness } from "./test-support/agent-harness.js";
import { MATH, PATCH } from "./test-support/math-fixture.js";
import { call, recorded } from "./test-support/scripted-replies.js";

const toolOutputs = (messages: { role: string; content: string }[]) =>
  messages.filter((m) => m.role === "tool").map((m) => m.content);

describe("plan mode (scripted model, real server and client)", () => {
  test("refuses apply_patch and a command with an error the model can act on; nothing changes on disk", async () => {
    const model = recorded([
      call("read_file", { path: "src/math.ts" }),
      call("apply_patch", { patch: PATCH }),
      call("shell", { command: "touch made-by-shell" }),
      { text: "Plan: 1. In src/math.ts, make add() return a + b." },
    ]);
    // `ask` would wait for a person: a refused command must never get that far.
    await using h = await agentHarness(
      { "src/math.ts": MATH },
      { script: model.script },
      { approvalPolicy: "ask" },
    );
    await h.thread.startTurn("add() subtracts; how would you fix it?", { mode: "plan" });

    expect(await readFile(path.join(h.dir, "src/math.ts"), "utf8")).toBe(MATH);
    expect(existsSync(path.join(h.dir, "made-by-shell"))).toBe(false);
    expect(h.events.some((e) => e.type === "approval.requested")).toBe(false);
    expect(h.thread.journal.newest).toBeUndefined();
    const outputs = toolOutputs(model.requests.at(-1)!.messages);
    expect(outputs[0]).toContain("return a - b;"); // read_file ran
    expect(outputs[1]).toMatch(/^Not run: plan mode is on, so apply_patch is refused/);
    expect(outputs[2]).toMatch(/^Not run: plan mode is on, so shell is refused/);
    expect(outputs[2]).toContain("Write the plan as your answer");
    const calls = h.events.flatMap((e) =>
      e.type === "item.completed" && e.item.type === "tool_call" ? [[e.item.name, e.item.status]] : [],
    );
    expect(calls).toEqual([
      ["read_file", "completed"],
      ["apply_patch", "failed"],
      ["shell", "failed"],
    ]);
    // The model reads the note at the end of the person's message; the faces show the message alone.
    const user = model.requests[0]!.messages.filter((m) => m.role === "user").at(-1)!;
    expect(user.content).toBe(`add() subtracts; how would you fix it?${PLAN_MODE_NOTE}`);
    const item = h.thread.history.find((i) => i.type === "user_message");
    expect(item).toEqual({
      type: "user_message",
      id: expect.any(String),
      text: "add() subtracts; how would you fix it?",
      mode: "plan",
    });
    expect(h.events.at(-1)).toMatchObject({ type: "turn.completed", status: "completed" });
  });

  test("the prompt prefix is byte-equal across the switch, and implement runs the edit", async () => {
    const model = recorded([
      { text: "Plan: make add() return a + b." },
      call("apply_patch", { patch: PATCH }),
      { text: "Done." },
    ]);
    await using h = await agentHarness({ "src/math.ts": MATH }, { script: model.script }, { temperature: 0 });
    await h.thread.prewarm();
    await h.thread.startTurn("fix add()", { mode: "plan" });
    expect(h.thread.mode).toBe("plan");
    await h.thread.startTurn("Implement the plan above.", { mode: "default" });
    expect(h.thread.mode).toBe("default");

    expect(await readFile(path.join(h.dir, "src/math.ts"), "utf8")).toBe(MATH.replace("a - b", "a + b"));
    // Instructions, tools and settings go out byte for byte the same in both modes.
    const prefixes = h.sent.map((body) => {
      const { model, instructions, tools, temperature, store, tool_choice } = JSON.parse(body);
      return JSON.stringify({ model, instructions, tools, temperature, store, tool_choice });
    });
    expect(prefixes).toHaveLength(4);
    expect(new Set(prefixes).size).toBe(1);
    // What the engine renders only grows: each request starts with the whole previous one, so the
    // implement turn reuses every token the plan turn evaluated.
    const rendered = model.requests;
    for (const [i, request] of rendered.entries()) {
      expect(request.tools).toEqual(rendered[0]!.tools);
      if (i > 0)
        expect(request.messages.slice(0, rendered[i - 1]!.messages.length)).toEqual(
          rendered[i - 1]!.messages,
        );
    }
    const turns = h.events.flatMap((e) => (e.type === "turn.completed" ? [e.stats] : []));
    expect(turns.map((t) => t.cachedInputTokens > 0)).toEqual([true, true]);
    expect(turns[1]!.cachedInputTokens).toBeGreaterThanOrEqual(
      turns[0]!.inputTokens + turns[0]!.outputTokens - 1,
    );
    // A conversation started over from the items (resume, /model) says to the model what it said then.
    const firstUser = rendered[0]!.messages.filter((m) => m.role === "user").at(-1)!.content;
    expect(historyFromItems(h.thread.history)[0]).toEqual({ role: "user", content: firstUser });
  });

  test("the mode is the thread's: later turns keep it until it is switched", async () => {
    const model = recorded([call("apply_patch", { patch: PATCH }), { text: "Plan." }]);
    await using h = await agentHarness({ "src/math.ts": MATH }, { script: model.script });
    h.thread.setMode("plan");
    expect(h.thread.info.mode).toBe("plan");
    await h.thread.startTurn("fix add()");
    expect(await readFile(path.join(h.dir, "src/math.ts"), "utf8")).toBe(MATH);
    h.thread.setMode("default");
    expect(h.thread.info).not.toHaveProperty("mode");
  });

  test("turn.start's mode and thread.set_mode are checked at the edge", () => {
    const start = HOST_REQUEST_SCHEMAS["turn.start"];
    const base = { type: "turn.start", thread_id: "t1", input: "hi" };
    expect(start.safeParse({ ...base, mode: "plan" }).success).toBe(true);
    expect(start.safeParse({ ...base, mode: "default" }).success).toBe(true);
    expect(start.safeParse(base).success).toBe(true);
    for (const mode of ["Plan", "implement", "", 1, null, ["plan"]])
      expect(start.safeParse({ ...base, mode }).success).toBe(false);
    const set = HOST_REQUEST_SCHEMAS["thread.set_mode"];
    expect(set.safeParse({ type: "thread.set_mode", thread_id: "t1", mode: "plan" }).success).toBe(true);
    expect(set.safeParse({ type: "thread.set_mode", thread_id: "t1" }).success).toBe(false);
    expect(set.safeParse({ type: "thread.set_mode", thread_id: "t1", mode: "edit" }).success).toBe(false);
  });
});
