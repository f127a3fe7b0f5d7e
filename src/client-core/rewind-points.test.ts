import { expect, test } from "vitest";
import type { ThreadItem } from "../protocol/agent.js";
import { rewindPoints } from "./rewind-points.js";
import { emptyView, reduceView, type StampedEvent, type ThreadView } from "./thread-view.js";

const patch = (id: string, paths: string[]): ThreadItem => ({
  type: "tool_call",
  id,
  name: "apply_patch",
  arguments: "{}",
  status: "completed",
  output: "ok",
  display: {
    kind: "diff",
    files: paths.map((path) => ({ path, kind: "update", hunks: [], added: 1, removed: 1 })),
  },
});
const items: ThreadItem[] = [
  { type: "user_message", id: "u1", text: "first" },
  patch("call_1", ["a.txt", "b.txt"]),
  { type: "agent_message", id: "m1", text: "done" },
  { type: "user_message", id: "u2", text: "second\nline" },
  patch("call_2", ["a.txt"]),
  { type: "user_message", id: "u3", text: "third" },
];

let seq = 0;
const apply = (view: ThreadView, event: Record<string, unknown>): ThreadView =>
  reduceView(view, { ...event, thread_id: "thr_1", seq: seq++, epoch: "ep" } as StampedEvent, 0);
const loaded = () => apply(emptyView("thr_1"), { type: "thread.history", items });

test("rewind points: each user message, newest first, with the files changed until the next one", () => {
  expect(rewindPoints(loaded().entries)).toEqual([
    { id: "u3", text: "third", paths: [] },
    { id: "u2", text: "second\nline", paths: ["a.txt"] },
    { id: "u1", text: "first", paths: ["a.txt", "b.txt"] },
  ]);
});

test("rewind points: a steer is no turn of its own; its files are the turn's it steered", () => {
  const steered: ThreadItem[] = [
    { type: "user_message", id: "u1", text: "first" },
    patch("call_1", ["a.txt"]),
    { type: "user_message", id: "s1", text: "use tabs", steer: true },
    patch("call_2", ["b.txt"]),
    { type: "user_message", id: "u2", text: "second" },
  ];
  const view = apply(emptyView("thr_1"), { type: "thread.history", items: steered });
  expect(rewindPoints(view.entries)).toEqual([
    { id: "u2", text: "second", paths: [] },
    { id: "u1", text: "first", paths: ["a.txt", "b.txt"] },
  ]);
  // Live: the steer is known by turn.steered before its message arrives.
  let live = apply(emptyView("thr_1"), { type: "turn.started", turn_id: "t1", input: "first" });
  live = apply(live, { type: "item.completed", turn_id: "t1", item: steered[0] });
  live = apply(live, { type: "turn.steered", turn_id: "t1", input: "use tabs" });
  live = apply(live, {
    type: "item.completed",
    turn_id: "t1",
    item: { type: "user_message", id: "s1", text: "use tabs" },
  });
  expect(rewindPoints(live.entries).map((point) => point.id)).toEqual(["u1"]);
});

test("thread.rewound: a code rewind marks the later patches' restored files undone and keeps the entries", () => {
  const view = apply(loaded(), {
    type: "thread.rewound",
    item_id: "u2",
    restore: "code",
    paths: ["a.txt"],
    text: "second\nline",
  });
  expect(view.entries).toHaveLength(items.length + 1);
  expect(view.entries.find((entry) => entry.id === "call_2")).toMatchObject({ files: { "a.txt": "undone" } });
  expect(view.entries.find((entry) => entry.id === "call_1")).toMatchObject({ files: {} });
  expect(view.entries.at(-1)).toMatchObject({
    kind: "notice",
    text: 'Rewound the code to before "second": restored a.txt.',
  });
});

test("thread.rewound: a conversation rewind cuts the entries from the message on", () => {
  for (const restore of ["conversation", "both"] as const) {
    const view = apply(loaded(), {
      type: "thread.rewound",
      item_id: "u2",
      restore,
      paths: [],
      text: "second",
    });
    expect(view.entries.map((entry) => entry.id)).toEqual([
      "u1",
      "call_1",
      "m1",
      expect.stringMatching(/^notice-/),
    ]);
    expect(view.entries.at(-1)).toMatchObject({
      text:
        restore === "both"
          ? 'Rewound the conversation and code (no files to restore) to before "second".'
          : 'Rewound the conversation to before "second".',
    });
  }
});
