import { expect, test } from "vitest";
import type { ThreadItem } from "../protocol/agent.js";
import { forkedItems } from "./thread-fork.js";

const items: ThreadItem[] = [
  { type: "user_message", id: "u1", text: "first" },
  { type: "agent_message", id: "a1", text: "partial" },
  { type: "user_message", id: "s1", text: "shorter", steer: true },
  { type: "agent_message", id: "a2", text: "short" },
  { type: "user_message", id: "u2", text: "second" },
  { type: "agent_message", id: "a3", text: "answer" },
];

test("a fork from a steered turn keeps the steer and the reply to it: a steer belongs to its turn", () => {
  const parent = { busy: false, history: items };
  expect(forkedItems(parent, "u1").map((item) => item.id)).toEqual(["u1", "a1", "s1", "a2"]);
  expect(forkedItems(parent, "u2").map((item) => item.id)).toEqual(items.map((item) => item.id));
  expect(() => forkedItems({ busy: true, history: items }, "u1")).toThrow("A turn is running");
});
