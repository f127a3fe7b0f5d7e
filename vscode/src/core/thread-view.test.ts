import { describe, expect, test } from "vitest";
import type { StampedEvent } from "../../../src/client-core/thread-view.js";
import type { ThreadInfo, TurnStats } from "../../../src/protocol/agent.js";
import {
  emptyView,
  meterText,
  pendingApprovals,
  reduceView,
  type ThreadView,
  type ViewAction,
} from "./thread-view.js";

const thread: ThreadInfo = {
  id: "thr_1",
  title: "New session",
  cwd: "/w",
  model: "scripted",
  createdAt: "",
  updatedAt: "",
};
const stats: TurnStats = {
  timeToFirstTokenMs: 120,
  tokensPerSecond: 31.5,
  inputTokens: 10,
  cachedInputTokens: 0,
  outputTokens: 5,
};

type Unstamped = StampedEvent extends infer E
  ? E extends StampedEvent
    ? Omit<E, "seq" | "thread_id" | "epoch">
    : never
  : never;

/** Stamps events 0, 1, 2, ... of thread thr_1. */
function stamp(events: Unstamped[], from = 0): StampedEvent[] {
  return events.map(
    (event, i) => ({ ...event, thread_id: "thr_1", seq: from + i, epoch: "ep_1" }) as StampedEvent,
  );
}

function fold(actions: ViewAction[], view: ThreadView = emptyView(), clock = { now: 0 }): ThreadView {
  let result = view;
  for (const action of actions) {
    clock.now += 100;
    result = reduceView(result, action, clock.now);
  }
  return result;
}

const turn: Unstamped[] = [
  { type: "thread.started", thread },
  { type: "turn.started", turn_id: "turn_1", input: "hi" },
  { type: "item.started", turn_id: "turn_1", item: { type: "user_message", id: "u1", text: "hi" } },
  { type: "item.completed", turn_id: "turn_1", item: { type: "user_message", id: "u1", text: "hi" } },
  { type: "item.started", turn_id: "turn_1", item: { type: "agent_message", id: "a1", text: "" } },
  { type: "item.delta", turn_id: "turn_1", item_id: "a1", delta: "Hello" },
  { type: "item.delta", turn_id: "turn_1", item_id: "a1", delta: " there" },
  { type: "item.delta", turn_id: "turn_1", item_id: "a1", delta: " friend" },
];

describe("thread view", () => {
  test("streams an agent message with a live meter, then settles with the agent's stats", () => {
    const clock = { now: 0 };
    const live = fold(stamp(turn), emptyView(), clock);
    expect(live.entries).toEqual([
      { kind: "user", id: "u1", text: "hi", steer: false },
      { kind: "agent", id: "a1", text: "Hello there friend", streaming: true },
    ]);
    expect(live.turn).toMatchObject({ turnId: "turn_1", deltas: 3 });
    // Started at 200, first delta at 600, three deltas 100 ms apart: 10 tok/s.
    expect(meterText(live, 900)).toBe("0.7 s · ttft 400 ms · ~10.0 tok/s");

    const done = fold(
      stamp(
        [
          {
            type: "item.completed",
            turn_id: "turn_1",
            item: { type: "agent_message", id: "a1", text: "Hello there friend" },
          },
          { type: "turn.completed", turn_id: "turn_1", status: "completed", stats },
        ],
        turn.length,
      ),
      live,
      clock,
    );
    expect(done.turn).toBeNull();
    expect(done.entries.at(-2)).toMatchObject({
      kind: "agent",
      streaming: false,
      text: "Hello there friend",
    });
    expect(done.entries.at(-1)).toMatchObject({ kind: "turn", status: "completed", stats });
    expect(meterText(done, 10_000)).toBe("ttft 120 ms · 31.5 tok/s");
  });

  test("replayed events (seq not above the last) change nothing; thread.started starts over", () => {
    const events = stamp(turn);
    const once = fold(events);
    const twice = fold(events.slice(3), once);
    expect(twice.entries).toEqual(once.entries);
    expect(twice.lastSeq).toBe(once.lastSeq);
    const again = fold(events.slice(0, 1), once);
    expect(again.entries).toEqual([]);
    expect(again.thread).toEqual(thread);
  });

  test("a thread.history reset replaces the view with the history, even at a seq seen already", () => {
    const streaming = fold(stamp(turn));
    expect(streaming.turn).not.toBeNull();
    const renamed = { ...thread, title: "renamed" };
    const items = [
      { type: "user_message" as const, id: "u1", text: "hi" },
      { type: "agent_message" as const, id: "a1", text: "Hello there friend, in full" },
    ];
    const view = fold(stamp([{ type: "thread.history", items, reset: true, thread: renamed }], 6), streaming);
    expect(view.thread).toEqual(renamed);
    expect(view.turn).toBeNull();
    expect(view.lastSeq).toBe(6);
    expect(view.entries.map((entry) => entry.kind === "agent" && entry.text)).toEqual([
      false,
      "Hello there friend, in full",
    ]);
    const next = fold(stamp([{ type: "turn.started", turn_id: "turn_2", input: "more" }], 7), view);
    expect(next.turn).not.toBeNull();
  });

  test("queued messages wait until their turn starts; an interrupt drops them; steers are marked", () => {
    const view = fold(
      stamp([
        { type: "thread.started", thread },
        { type: "turn.started", turn_id: "t1", input: "first" },
        { type: "turn.queued", input: "second" },
        { type: "turn.queued", input: "third" },
        { type: "turn.steered", turn_id: "t1", input: "shorter" },
        { type: "item.started", turn_id: "t1", item: { type: "user_message", id: "u2", text: "shorter" } },
        { type: "turn.completed", turn_id: "t1", status: "completed", stats },
        { type: "turn.started", turn_id: "t2", input: "second" },
      ]),
    );
    expect(view.queued).toEqual(["third"]);
    expect(view.entries[0]).toMatchObject({ kind: "user", text: "shorter", steer: true });
    const interrupted = fold(
      stamp([{ type: "turn.completed", turn_id: "t2", status: "interrupted", stats }], 8),
      view,
    );
    expect(interrupted.queued).toEqual([]);
    expect(interrupted.entries.at(-1)).toMatchObject({ kind: "turn", status: "interrupted" });
  });

  test("history, approvals, patch resolutions and undo", () => {
    const diff = {
      kind: "diff" as const,
      files: [{ path: "a.txt", kind: "update" as const, hunks: [], added: 1, removed: 1 }],
    };
    const view = fold(
      stamp([
        { type: "thread.started", thread },
        {
          type: "thread.history",
          items: [
            { type: "user_message", id: "h1", text: "old question" },
            { type: "agent_message", id: "h2", text: "old answer" },
          ],
        },
        { type: "turn.started", turn_id: "t1", input: "run it" },
        {
          type: "approval.requested",
          turn_id: "t1",
          approval_id: "ap1",
          kind: "shell",
          command: "npm test",
          cwd: "/w",
          sandbox: "workspace-write",
        },
        {
          type: "item.completed",
          turn_id: "t1",
          item: {
            type: "tool_call",
            id: "c1",
            name: "apply_patch",
            arguments: "{}",
            status: "completed",
            display: diff,
          },
        },
      ]),
    );
    expect(view.entries.slice(0, 2)).toMatchObject([
      { kind: "user", text: "old question" },
      { kind: "agent", text: "old answer", streaming: false },
    ]);
    expect(pendingApprovals(view).map((a) => a.command)).toEqual(["npm test"]);
    const later = fold(
      stamp(
        [
          { type: "approval.resolved", approval_id: "ap1", approved: false },
          { type: "patch.resolved", item_id: "c1", path: "a.txt", resolution: "rejected" },
          { type: "patch.undone", item_id: "c1", paths: ["a.txt"] },
          { type: "thread.renamed", thread: { ...thread, title: "Renamed" } },
        ],
        5,
      ),
      view,
    );
    expect(pendingApprovals(later)).toEqual([]);
    expect(later.entries.find((e) => e.kind === "approval")).toMatchObject({
      state: "denied",
      sandbox: "workspace-write",
    });
    expect(later.entries.find((e) => e.kind === "tool")).toMatchObject({
      resolutions: { "a.txt": "rejected" },
      undone: true,
    });
    expect(later.thread?.title).toBe("Renamed");
    const reviewed = fold(
      [{ type: "local.patch", itemId: "c1", path: "b.txt", outcome: "partly accepted" }],
      later,
    );
    expect(reviewed.entries.find((e) => e.kind === "tool")).toMatchObject({
      resolutions: { "a.txt": "rejected", "b.txt": "partly accepted" },
    });
  });

  test("sub-agents: started, progress, completed; events of a newer host are ignored", () => {
    const subagent = {
      id: "sub_1",
      task: "find the parser",
      model: "small",
      status: "running" as const,
      outputTokens: 0,
      progress: "",
    };
    const view = fold(
      stamp([
        { type: "thread.started", thread },
        { type: "subagent.started", subagent },
        { type: "subagent.progress", subagent_id: "sub_1", output_tokens: 12, progress: "read_file" },
        { type: "subagent.completed", subagent_id: "sub_1", status: "completed", result: "src/parse.ts" },
      ]),
    );
    expect(view.entries).toEqual([
      {
        kind: "subagent",
        id: "sub_1",
        info: { ...subagent, status: "completed", outputTokens: 12, progress: "read_file" },
        result: "src/parse.ts",
      },
    ]);
    const future = { type: "thread.teleported", thread_id: "thr_1", seq: 4 } as unknown as StampedEvent;
    const after = fold([future], view);
    expect(after.entries).toEqual(view.entries);
    expect(after.lastSeq).toBe(4);
  });

  test("local notices and resets", () => {
    const view = fold([{ type: "local.notice", text: "Disconnected", tone: "error" }]);
    expect(view.entries).toMatchObject([{ kind: "notice", text: "Disconnected", tone: "error" }]);
    expect(fold([{ type: "local.reset" }], view).entries).toEqual([]);
  });
});
