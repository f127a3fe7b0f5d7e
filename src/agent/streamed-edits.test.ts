import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, test } from "vitest";
import type { GenerateRequest } from "../engine/engine.js";
import type { ScriptedReply } from "../engine/scripted/scripted-engine.js";
import type { ThreadEvent, ThreadItem } from "../protocol/agent.js";
import { historyFromItems } from "./conversation-history.js";
import { agentHarness } from "./test-support/agent-harness.js";
import { MATH, PATCH } from "./test-support/math-fixture.js";
import { call, recorded } from "./test-support/scripted-replies.js";

const patchArguments = JSON.stringify({ patch: PATCH });

type ToolCallItem = Extract<ThreadItem, { type: "tool_call" }>;

/** The tool_call item events of one call, in order. */
function callEvents(events: ThreadEvent[], id: string): ThreadEvent[] {
  return events.filter(
    (e) =>
      ((e.type === "item.started" || e.type === "item.completed") && e.item.id === id) ||
      (e.type === "item.delta" && e.item_id === id),
  );
}

function completedCall(events: ThreadEvent[], name: string): ToolCallItem | undefined {
  const event = events.find(
    (e) => e.type === "item.completed" && e.item.type === "tool_call" && e.item.name === name,
  );
  return event?.type === "item.completed" ? (event.item as ToolCallItem) : undefined;
}

describe("edits that stream: a tool call is shown as the model writes it", () => {
  test("item.started (running, no arguments), item.delta per argument piece, then item.completed", async () => {
    const model = recorded([call("apply_patch", { patch: PATCH }), { text: "Fixed." }]);
    await using h = await agentHarness(
      { "src/math.ts": MATH },
      { script: model.script, tokensPerSecond: 200 },
    );
    await h.thread.startTurn("fix add");
    const started = h.events.find((e) => e.type === "item.started" && e.item.type === "tool_call");
    if (started?.type !== "item.started") throw new Error("no tool_call item started");
    expect(started.item).toMatchObject({ name: "apply_patch", arguments: "", status: "running" });

    const events = callEvents(h.events, started.item.id);
    const deltas = events.flatMap((e) => (e.type === "item.delta" ? [e.delta] : []));
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.join("")).toBe(patchArguments);
    expect(events[0]?.type).toBe("item.started");
    expect(events.at(-1)).toMatchObject({
      type: "item.completed",
      item: { arguments: patchArguments, status: "completed", display: { kind: "diff" } },
    });
    expect(events.filter((e) => e.type === "item.started")).toHaveLength(1);
    expect(await readFile(path.join(h.dir, "src/math.ts"), "utf8")).toBe(MATH.replace("a - b", "a + b"));
  });

  test("interrupting while apply_patch streams applies nothing; the call fails as not applied", async () => {
    const model = recorded([call("apply_patch", { patch: PATCH })]);
    await using h = await agentHarness(
      { "src/math.ts": MATH },
      { script: model.script, tokensPerSecond: 100 },
    );
    const firstDelta = h.next("item.delta");
    const turn = h.thread.startTurn("fix add");
    const delta = await firstDelta;
    h.thread.interrupt();
    await turn;

    expect(h.events.find((e) => e.type === "turn.completed")).toMatchObject({ status: "interrupted" });
    expect(await readFile(path.join(h.dir, "src/math.ts"), "utf8")).toBe(MATH);
    const item = completedCall(h.events, "apply_patch");
    expect(item?.id).toBe(delta.item_id);
    expect(item?.status).toBe("failed");
    expect(item?.partial).toBe(true);
    expect(item?.output).toMatch(/not applied/i);
    expect(item?.arguments.length).toBeLessThan(patchArguments.length);
    expect(patchArguments.startsWith(item?.arguments ?? "-")).toBe(true);
    // The cut-off call never became part of the conversation: the next turn runs without owing it.
    await h.thread.startTurn("never mind");
    expect(h.events.filter((e) => e.type === "turn.completed").at(-1)).toMatchObject({ status: "completed" });
    const last = model.requests.at(-1)!;
    expect(last.messages.some((m) => m.role === "tool")).toBe(false);
    // The thread keeps the cut-off call to show, marked partial; a history rebuilt from the items
    // (a resumed session, compaction) leaves it out, as the server did.
    expect(h.thread.history.find((i) => i.type === "tool_call")).toMatchObject({ partial: true });
    expect(historyFromItems(h.thread.history).some((i) => "type" in i && i.type === "function_call")).toBe(
      false,
    );
  });

  test("a steer while apply_patch streams applies nothing and the continuation answers the steer", async () => {
    const seen: GenerateRequest[] = [];
    const script = (request: GenerateRequest): ScriptedReply => {
      seen.push(request);
      const last = request.messages.at(-1);
      if (last?.role === "user" && last.content === "leave the file alone") return { text: "Leaving it." };
      return call("apply_patch", { patch: PATCH });
    };
    await using h = await agentHarness({ "src/math.ts": MATH }, { script, tokensPerSecond: 100 });
    const firstDelta = h.next("item.delta");
    const turn = h.thread.startTurn("fix add");
    await firstDelta;
    h.thread.submit("leave the file alone");
    await turn;

    expect(await readFile(path.join(h.dir, "src/math.ts"), "utf8")).toBe(MATH);
    const item = completedCall(h.events, "apply_patch");
    expect(item).toMatchObject({ status: "failed", partial: true });
    expect(item?.output).toMatch(/not applied/i);
    expect(h.events.find((e) => e.type === "turn.completed")).toMatchObject({ status: "completed" });
    const texts = h.events.flatMap((e) =>
      e.type === "item.completed" && e.item.type === "agent_message" ? [e.item.text] : [],
    );
    expect(texts.at(-1)).toBe("Leaving it.");
    // The continuation was built on the steer, with no trace of the unfinished call.
    const continuation = seen.at(-1)!;
    expect(continuation.messages.at(-1)).toEqual({ role: "user", content: "leave the file alone" });
    expect(continuation.messages.some((m) => m.role === "assistant" && m.toolCalls?.length)).toBe(false);
  });

  test("a finished call of an interrupted turn is not run either, and its item says so", async () => {
    const slowText = Array.from({ length: 200 }, (_, i) => `w${i}`).join(" ");
    const model = recorded([
      { toolCalls: [{ name: "apply_patch", arguments: patchArguments }], text: "" },
      { text: slowText },
    ]);
    await using h = await agentHarness(
      { "src/math.ts": MATH },
      { script: model.script, tokensPerSecond: 400 },
    );
    // Interrupt as soon as the call is complete, before the response ends and the tool would run.
    let interrupted = false;
    h.thread.on((event) => {
      if (event.type === "item.delta" && !interrupted) {
        const item = h.events.find((e) => e.type === "item.started" && e.item.id === event.item_id);
        if (item?.type === "item.started" && item.item.type === "tool_call") {
          const written = callEvents(h.events, event.item_id)
            .flatMap((e) => (e.type === "item.delta" ? [e.delta] : []))
            .join("");
          if (written === patchArguments) {
            interrupted = true;
            h.thread.interrupt();
          }
        }
      }
    });
    await h.thread.startTurn("fix add");
    expect(interrupted).toBe(true);
    expect(await readFile(path.join(h.dir, "src/math.ts"), "utf8")).toBe(MATH);
    // The call was whole (not cut off), yet not run: the turn was interrupted before tools ran.
    expect(completedCall(h.events, "apply_patch")).toMatchObject({
      status: "failed",
      arguments: patchArguments,
      output: expect.stringMatching(/^Aborted: the user interrupted.*not run/),
    });
  });
});
