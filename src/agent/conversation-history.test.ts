import fc from "fast-check";
import { describe, expect, test } from "vitest";
import type { ThreadItem } from "../protocol/agent.js";
import { compactHistory, historyFromItems, MAX_KEPT_TEXT } from "./conversation-history.js";
import { withPlanNote } from "./plan-mode.js";

/** A conversation: turns of a user message (plan mode or not), then messages and tool calls. */
const conversation = fc
  .array(
    fc.record({
      text: fc.string({ minLength: 1, maxLength: 40 }),
      plan: fc.boolean(),
      after: fc.array(
        fc.oneof(
          fc.record({ kind: fc.constant("message" as const), text: fc.string({ maxLength: 40 }) }),
          fc.record({ kind: fc.constant("call" as const), partial: fc.boolean() }),
          fc.record({ kind: fc.constant("notice" as const) }),
        ),
        { maxLength: 4 },
      ),
    }),
    { minLength: 1, maxLength: 8 },
  )
  .map((turns) => {
    const items: ThreadItem[] = [];
    let n = 0;
    for (const turn of turns) {
      items.push({
        type: "user_message",
        id: `u${n++}`,
        text: turn.text,
        ...(turn.plan ? { mode: "plan" as const } : {}),
      });
      for (const step of turn.after) {
        const id = `i${n++}`;
        if (step.kind === "message") items.push({ type: "agent_message", id, text: step.text });
        else if (step.kind === "notice") items.push({ type: "notice", id, text: "note" });
        else
          items.push({
            type: "tool_call",
            id,
            name: "read_file",
            arguments: JSON.stringify({ path: `f${n}.ts` }),
            status: step.partial ? "failed" : "completed",
            output: "out",
            ...(step.partial ? { partial: true as const } : {}),
          });
      }
    }
    return items;
  });

describe("compactHistory", () => {
  test("always a conversation the model can continue: each output follows its call, the last turns whole, the first message and the newest plan kept", () => {
    fc.assert(
      fc.property(
        conversation,
        fc.integer({ min: 1, max: 3 }),
        fc.option(fc.string({ maxLength: 20 })),
        (items, keepTurns, focus) => {
          const compacted = compactHistory(items, { keepTurns, ...(focus ? { focus } : {}) });
          const users = items.filter((item) => item.type === "user_message");
          if (users.length <= keepTurns) {
            expect(compacted).toBeNull();
            return;
          }
          expect(compacted).not.toBeNull();
          const calls = new Set<string>();
          for (const entry of compacted!) {
            if ("type" in entry && entry.type === "function_call") calls.add(entry.call_id);
            if ("type" in entry && entry.type === "function_call_output")
              expect(calls.has(entry.call_id)).toBe(true);
          }
          // The kept turns are exactly as a resend would send them.
          const cut = items.indexOf(users[users.length - keepTurns]!);
          expect(compacted!.slice(1)).toEqual(historyFromItems(items.slice(cut)));
          const digest = compacted![0]!;
          expect(digest).toMatchObject({ role: "developer" });
          const text = (digest as { content: string }).content;
          expect(text).toContain(users[0]!.text.slice(0, MAX_KEPT_TEXT));
          if (focus) expect(text).toContain(`keep this in focus: ${focus}`);
          const older = items.slice(0, cut);
          const lastPlan = older.findLastIndex(
            (item) => item.type === "user_message" && item.mode === "plan",
          );
          if (lastPlan >= 0) {
            const next = older.findIndex((item, i) => i > lastPlan && item.type === "user_message");
            const answer = older
              .slice(lastPlan + 1, next < 0 ? undefined : next)
              .findLast((item) => item.type === "agent_message");
            if (answer?.type === "agent_message" && answer.text)
              expect(text).toContain(`plan mode, word for word:\n${answer.text}`);
          }
        },
      ),
    );
  });

  test("a first message longer than the bound is cut and marked", () => {
    const items: ThreadItem[] = [
      { type: "user_message", id: "a", text: "x".repeat(MAX_KEPT_TEXT + 10) },
      { type: "user_message", id: "b", text: "next" },
    ];
    const digest = compactHistory(items, { keepTurns: 1 })![0] as { content: string };
    expect(digest.content).toContain(`${"x".repeat(MAX_KEPT_TEXT)}…`);
    expect(digest.content).not.toContain("x".repeat(MAX_KEPT_TEXT + 1));
  });

  test("a plan-mode message resent whole carries the plan note", () => {
    const items: ThreadItem[] = [{ type: "user_message", id: "a", text: "plan it", mode: "plan" }];
    expect(historyFromItems(items)).toEqual([{ role: "user", content: withPlanNote("plan it") }]);
  });
});
