import { describe, expect, test } from "vitest";
import type { TurnStats } from "../../protocol/agent.js";
import { applyEvent, emptyView, type StampedEvent, type ThreadView } from "./thread-view.js";

const stats: TurnStats = {
  timeToFirstTokenMs: 12,
  tokensPerSecond: 50,
  inputTokens: 10,
  cachedInputTokens: 0,
  outputTokens: 5,
};

type Unstamped = StampedEvent extends infer E
  ? E extends StampedEvent
    ? Omit<E, "seq" | "thread_id" | "epoch">
    : never
  : never;

function stamp(events: Unstamped[], from = 0, epoch = "ep_1"): StampedEvent[] {
  return events.map((event, i) => ({ ...event, thread_id: "thr_1", seq: from + i, epoch }) as StampedEvent);
}

function run(events: StampedEvent[], view: ThreadView = emptyView("thr_1")): ThreadView {
  return events.reduce((v, e, i) => applyEvent(v, e, i * 10), view);
}

const info = { id: "thr_1", title: "t", cwd: "/r", model: "m", createdAt: "", updatedAt: "" };
const turn = stamp([
  { type: "thread.started", thread: info },
  { type: "turn.started", turn_id: "turn_1", input: "hi" },
  { type: "item.started", turn_id: "turn_1", item: { type: "user_message", id: "u1", text: "hi" } },
  { type: "item.completed", turn_id: "turn_1", item: { type: "user_message", id: "u1", text: "hi" } },
  { type: "item.started", turn_id: "turn_1", item: { type: "agent_message", id: "a1", text: "" } },
  { type: "item.delta", turn_id: "turn_1", item_id: "a1", delta: "Hel" },
  { type: "item.delta", turn_id: "turn_1", item_id: "a1", delta: "lo" },
  { type: "item.completed", turn_id: "turn_1", item: { type: "agent_message", id: "a1", text: "Hello" } },
  { type: "turn.completed", turn_id: "turn_1", status: "completed", stats },
]);

describe("thread view", () => {
  test("builds entries by id from a turn's events", () => {
    const view = run(turn);
    expect(view.entries).toEqual([
      { kind: "user", id: "u1", text: "hi", steer: false },
      { kind: "agent", id: "a1", text: "Hello", streaming: false },
    ]);
    expect(view.turn).toBeNull();
    expect(view.turns).toEqual([{ id: "turn_1", status: "completed", stats }]);
    expect(view.lastSeq).toBe(8);
  });

  test("replayed events (a reconnect resuming too early) change nothing: no repeated text", () => {
    const partial = run(turn.slice(0, 7));
    expect(partial.entries.at(-1)).toMatchObject({ text: "Hello", streaming: true });
    const again = run(turn, partial);
    expect(again.entries).toEqual(run(turn).entries);
    expect(applyEvent(again, turn[5]!, 0)).toBe(again);
  });

  test("the live meter measures from turn start to the first delta", () => {
    const view = run(turn.slice(0, 7));
    expect(view.turn).toMatchObject({ startedAt: 10, firstTokenAt: 50, lastTokenAt: 60, deltas: 1 });
  });

  test("steers mark the next user message; queued messages leave the queue when they start", () => {
    const view = run(
      stamp([
        { type: "turn.started", turn_id: "t1", input: "a" },
        { type: "turn.queued", input: "later" },
        { type: "turn.steered", turn_id: "t1", input: "b" },
        { type: "item.started", turn_id: "t1", item: { type: "user_message", id: "u2", text: "b" } },
        { type: "item.completed", turn_id: "t1", item: { type: "user_message", id: "u2", text: "b" } },
        { type: "turn.completed", turn_id: "t1", status: "completed", stats },
      ]),
    );
    expect(view.entries).toEqual([{ kind: "user", id: "u2", text: "b", steer: true }]);
    expect(view.queued).toEqual(["later"]);
    const next = run(stamp([{ type: "turn.started", turn_id: "t2", input: "later" }], 6), view);
    expect(next.queued).toEqual([]);
  });

  test("an interrupt drops the queue and says so; patch files track accept, reject and undo", () => {
    const diff = {
      type: "tool_call" as const,
      id: "call_1",
      name: "apply_patch",
      arguments: "{}",
      status: "completed" as const,
      display: {
        kind: "diff" as const,
        files: [
          { path: "a.ts", kind: "update" as const, hunks: [], added: 1, removed: 1 },
          { path: "b.ts", kind: "move" as const, from: "old.ts", hunks: [], added: 0, removed: 0 },
        ],
      },
    };
    const view = run(
      stamp([
        { type: "turn.started", turn_id: "t1", input: "a" },
        { type: "turn.queued", input: "x" },
        { type: "item.completed", turn_id: "t1", item: diff },
        { type: "turn.completed", turn_id: "t1", status: "interrupted", stats },
        { type: "patch.resolved", item_id: "call_1", path: "a.ts", resolution: "accepted" },
        { type: "patch.undone", item_id: "call_1", paths: ["a.ts", "b.ts", "old.ts"] },
      ]),
    );
    expect(view.queued).toEqual([]);
    expect(view.entries.map((e) => (e.kind === "notice" ? e.text : e.kind))).toEqual([
      "tool",
      "Interrupted. 1 queued message dropped.",
      "Undone: a.ts, b.ts, old.ts",
    ]);
    expect(view.files).toEqual({ call_1: { "a.ts": "undone", "b.ts": "undone" } });
  });

  test("a resumed session's history fills the entries", () => {
    const view = run(
      stamp([
        { type: "thread.started", thread: info },
        { type: "thread.history", items: [{ type: "agent_message", id: "a0", text: "old" }] },
      ]),
    );
    expect(view.entries).toEqual([{ kind: "agent", id: "a0", text: "old", streaming: false }]);
  });

  test("a thread.history reset replaces the view with the history, even at a seq seen already", () => {
    const before = run(turn.slice(0, 7)); // a turn streaming
    const renamed = { ...info, title: "renamed" };
    const items = [
      { type: "user_message" as const, id: "u1", text: "hi" },
      { type: "agent_message" as const, id: "a1", text: "Hello there" },
    ];
    const [reset] = stamp([{ type: "thread.history", items, reset: true, thread: renamed }], 5);
    const view = applyEvent(before, reset!, 100);
    expect(view.entries).toEqual([
      { kind: "user", id: "u1", text: "hi", steer: false },
      { kind: "agent", id: "a1", text: "Hello there", streaming: false },
    ]);
    expect(view.turn).toBeNull();
    expect(view.info).toEqual(renamed);
    expect(view.lastSeq).toBe(5);
    // Live events continue after it.
    const next = run(stamp([{ type: "turn.started", turn_id: "turn_2", input: "more" }], 6), view);
    expect(next.turn).toMatchObject({ id: "turn_2" });
  });

  test("an event of a new epoch (the server restarted) starts the view over instead of being dropped", () => {
    const old = run(turn);
    const restarted = stamp(
      [
        { type: "thread.started", thread: info },
        { type: "thread.history", items: [{ type: "agent_message", id: "a9", text: "from the transcript" }] },
      ],
      0,
      "ep_2",
    );
    const view = run(restarted, old);
    expect(view.epoch).toBe("ep_2");
    expect(view.lastSeq).toBe(1);
    expect(view.entries).toEqual([
      { kind: "agent", id: "a9", text: "from the transcript", streaming: false },
    ]);
    expect(view.turns).toEqual([]);
  });
});

describe("sub-agents", () => {
  test("are listed with their progress and final status", () => {
    const subagent = {
      id: "sub_1",
      task: "port the parser",
      model: "deep",
      status: "running" as const,
      outputTokens: 0,
      progress: "",
    };
    const view = run(
      stamp([
        { type: "thread.started", thread: info },
        { type: "subagent.started", subagent },
        { type: "subagent.progress", subagent_id: "sub_1", output_tokens: 40, progress: "read_file" },
      ]),
    );
    expect(view.subAgents).toEqual([{ ...subagent, outputTokens: 40, progress: "read_file" }]);
    const failed = run(
      stamp(
        [{ type: "subagent.completed", subagent_id: "sub_1", status: "failed", error: "upstream down" }],
        3,
      ),
      view,
    );
    expect(failed.subAgents[0]).toMatchObject({ status: "failed", progress: "upstream down" });
  });
});
