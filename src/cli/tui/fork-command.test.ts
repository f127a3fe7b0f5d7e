import { expect, test } from "vitest";
import type { ThreadItem } from "../../protocol/agent.js";
import { forkTarget } from "./fork-command.js";
import { parseSlashCommand } from "./slash-commands.js";

const items: ThreadItem[] = [
  { type: "user_message", id: "u1", text: "first\nquestion" },
  { type: "agent_message", id: "a1", text: "answer" },
  { type: "user_message", id: "u2", text: "second" },
  { type: "agent_message", id: "a2", text: "answer" },
];

test("/fork picks the latest turn, /fork N turn N, and lists the turns for list or a number out of range", () => {
  expect(parseSlashCommand("/fork 2")).toEqual({ name: "fork", args: "2" });
  expect(forkTarget("", items)).toMatchObject({ itemId: "u2", number: 2 });
  expect(forkTarget("1", items)).toEqual({ itemId: "u1", number: 1, label: "first question" });
  expect(forkTarget("list", items)).toEqual({
    lines: ["Turns (fork one with /fork N):", "    1  first question", "    2  second"],
  });
  for (const args of ["3", "0", "-1", "1.5", "two"])
    expect(forkTarget(args, items)).toMatchObject({
      lines: [
        `No turn ${args}; the turns are (fork one with /fork N):`,
        expect.any(String),
        expect.any(String),
      ],
    });
  expect(forkTarget("", [])).toEqual({ lines: ["Nothing to fork yet: the session has no turn."] });
});

test("/fork list shows a steer with the turn it steered, not as a turn of its own", () => {
  const steered: ThreadItem[] = [
    ...items.slice(0, 2),
    { type: "user_message", id: "s1", text: "shorter", steer: true },
    ...items.slice(2),
  ];
  expect(forkTarget("list", steered)).toEqual({
    lines: ["Turns (fork one with /fork N):", "    1  first question", "    2  second"],
  });
  expect(forkTarget("", steered)).toMatchObject({ itemId: "u2", number: 2 });
});
