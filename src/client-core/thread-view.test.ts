import { describe, expect, test } from "vitest";
import type { ThreadInfo, ThreadItem, TurnStats } from "../protocol/agent.js";
import {
  diffOf,
  emptyView,
  reduceView,
  runningTools,
  type StampedEvent,
  startsOver,
  streamingMessage,
  type ThreadView,
  type ViewAction,
} from "./thread-view.js";
import { liveMeter, meterText } from "./turn-meter.js";

const thread: ThreadInfo = {
  id: "thr_1",
  title: "New session",
  cwd: "/w",
  model: "m",
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

/** Stamps events `from`, `from + 1`, ... of thr_1 in `epoch`. */
function stamp(events: Unstamped[], from = 0, epoch = "ep_1"): StampedEvent[] {
  return events.map((event, i) => ({ ...event, thread_id: "thr_1", seq: from + i, epoch }) as StampedEvent);
}

/** Folds actions, the clock advancing 100 ms before each. */
function fold(actions: ViewAction[], view: ThreadView = emptyView("thr_1"), clock = { now: 0 }): ThreadView {
  let result = view;
  for (const action of actions) {
    clock.now += 100;
    result = reduceView(result, action, clock.now);
  }
  return result;
}

const user = (id: string, text: string): ThreadItem => ({ type: "user_message", id, text });
const agent = (id: string, text: string): ThreadItem => ({ type: "agent_message", id, text });
const patchItem: ThreadItem = {
  type: "tool_call",
  id: "call_1",
  name: "apply_patch",
  arguments: "{}",
  status: "completed",
  display: {
    kind: "diff",
    files: [
      { path: "a.ts", kind: "update", hunks: [], added: 1, removed: 0 },
      { path: "new.ts", kind: "move", from: "old.ts", hunks: [], added: 0, removed: 0 },
    ],
  },
};

const turn: Unstamped[] = [
  { type: "thread.started", thread },
  { type: "turn.started", turn_id: "t1", input: "hi" },
  { type: "item.completed", turn_id: "t1", item: user("u1", "hi") },
  { type: "item.started", turn_id: "t1", item: agent("a1", "") },
  { type: "item.delta", turn_id: "t1", item_id: "a1", delta: "Hello" },
  { type: "item.delta", turn_id: "t1", item_id: "a1", delta: " there" },
  { type: "item.delta", turn_id: "t1", item_id: "a1", delta: " friend" },
];
const done: Unstamped = { type: "turn.completed", turn_id: "t1", status: "completed", stats };

function notices(view: ThreadView): string[] {
  return view.entries.flatMap((entry) => (entry.kind === "notice" ? [entry.text] : []));
}

describe("thread events", () => {
  test("thread.started and thread.renamed set the thread's info", () => {
    const renamed = { ...thread, title: "Fix the parser" };
    const view = fold(
      stamp([
        { type: "thread.started", thread },
        { type: "thread.renamed", thread: renamed },
      ]),
    );
    expect(view.info).toEqual(renamed);
    expect(view.lastSeq).toBe(1);
    expect(view.epoch).toBe("ep_1");
  });

  test("a turn streams into one agent entry that stops streaming when the turn ends", () => {
    const streaming = fold(stamp(turn));
    expect(streaming.entries).toEqual([
      { kind: "user", id: "u1", text: "hi", steer: false },
      { kind: "agent", id: "a1", text: "Hello there friend", streaming: true },
    ]);
    expect(streamingMessage(streaming)?.id).toBe("a1");
    const ended = fold(stamp([done], turn.length), streaming);
    expect(ended.entries[1]).toEqual({
      kind: "agent",
      id: "a1",
      text: "Hello there friend",
      streaming: false,
    });
    expect(ended.turn).toBeNull();
    expect(ended.turns).toEqual([{ id: "t1", status: "completed", stats, after: 2 }]);
    expect(streamingMessage(ended)).toBeNull();
  });

  test("item.completed carries the whole text; a second item.started for an id adds no entry", () => {
    const view = fold(
      stamp([
        ...turn,
        { type: "item.started", turn_id: "t1", item: agent("a1", "") },
        { type: "item.completed", turn_id: "t1", item: agent("a1", "Hello there, friend.") },
      ]),
    );
    expect(view.entries.filter((entry) => entry.id === "a1")).toEqual([
      { kind: "agent", id: "a1", text: "Hello there, friend.", streaming: false },
    ]);
  });

  test("a delta for an unknown item changes nothing", () => {
    const view = fold(stamp(turn));
    const next = reduceView(
      view,
      stamp([{ type: "item.delta", turn_id: "t1", item_id: "nope", delta: "x" }], 99)[0]!,
      1,
    );
    expect(next.entries).toEqual(view.entries);
  });

  test("tool calls run and complete in place; the running ones are listed", () => {
    const running: ThreadItem = {
      type: "tool_call",
      id: "c1",
      name: "read_file",
      arguments: "{}",
      status: "running",
    };
    const started = fold(
      stamp([...turn.slice(0, 2), { type: "item.started", turn_id: "t1", item: running }]),
    );
    expect(runningTools(started)).toEqual([running]);
    const completed = fold(
      stamp(
        [{ type: "item.completed", turn_id: "t1", item: { ...running, status: "completed", output: "ok" } }],
        3,
      ),
      started,
    );
    expect(runningTools(completed)).toEqual([]);
    expect(completed.entries).toHaveLength(1);
  });

  test("deltas of a running tool call append to its arguments; item.completed replaces them", () => {
    const call: ThreadItem = {
      type: "tool_call",
      id: "c1",
      name: "apply_patch",
      arguments: "",
      status: "running",
    };
    const clock = { now: 0 };
    const streaming = fold(
      stamp([
        ...turn.slice(0, 2),
        { type: "item.started", turn_id: "t1", item: call },
        { type: "item.delta", turn_id: "t1", item_id: "c1", delta: '{"patch": "*** Begin' },
        { type: "item.delta", turn_id: "t1", item_id: "c1", delta: " Patch\\n" },
      ]),
      emptyView(),
      clock,
    );
    expect(runningTools(streaming)).toEqual([{ ...call, arguments: '{"patch": "*** Begin Patch\\n' }]);
    // Argument deltas are tokens too: the live rate counts them.
    expect(streaming.turn?.deltas).toBe(2);
    expect(streaming.turn?.lastDeltaAt).toBe(clock.now);
    const failed = {
      ...call,
      arguments: '{"patch": "*** Begin Patch\\n',
      status: "failed" as const,
      output: "Not applied: the turn was interrupted.",
    };
    const ended = fold(
      stamp(
        [
          { type: "item.completed", turn_id: "t1", item: failed },
          // A late delta after the call completed changes nothing.
          { type: "item.delta", turn_id: "t1", item_id: "c1", delta: "more" },
        ],
        5,
      ),
      streaming,
    );
    expect(ended.entries).toEqual([{ kind: "tool", id: "c1", item: failed, files: {} }]);
  });

  test("an item notice is a dim notice entry", () => {
    const view = fold(
      stamp([
        { type: "thread.started", thread },
        { type: "item.completed", turn_id: "t1", item: { type: "notice", id: "n1", text: "Compacted." } },
      ]),
    );
    expect(view.entries).toEqual([{ kind: "notice", id: "n1", text: "Compacted.", tone: "dim" }]);
  });

  test("reasoning is shown dimmed once complete; while it streams there is no entry and no answer", () => {
    const streaming = fold(
      stamp([
        { type: "thread.started", thread },
        { type: "turn.started", turn_id: "t1", input: "hi" },
        { type: "item.started", turn_id: "t1", item: { type: "reasoning", id: "r1", text: "" } },
        { type: "item.delta", turn_id: "t1", item_id: "r1", delta: "A greeting." },
      ]),
    );
    expect(streaming.entries).toEqual([]);
    expect(streamingMessage(streaming)).toBeNull();
    const done = fold(
      stamp(
        [
          {
            type: "item.completed",
            turn_id: "t1",
            item: { type: "reasoning", id: "r1", text: "A greeting." },
          },
          { type: "item.started", turn_id: "t1", item: agent("a1", "") },
        ],
        4,
      ),
      streaming,
    );
    expect(done.entries).toEqual([
      { kind: "notice", id: "r1", text: "A greeting.", tone: "dim" },
      { kind: "agent", id: "a1", text: "", streaming: true },
    ]);
  });
});

describe("turn ends in the conversation", () => {
  test("each finished turn records how many entries came before its end, its notice after it", () => {
    const view = fold(
      stamp([
        ...turn,
        done,
        { type: "turn.started", turn_id: "t2", input: "more" },
        { type: "item.completed", turn_id: "t2", item: user("u2", "more") },
        { type: "turn.completed", turn_id: "t2", status: "interrupted", stats },
      ]),
    );
    expect(view.turns.map((record) => [record.id, record.status, record.after])).toEqual([
      ["t1", "completed", 2],
      ["t2", "interrupted", 3],
    ]);
    expect(view.entries.slice(3)).toEqual([
      { kind: "notice", id: "notice-1", text: "Interrupted.", tone: "warn" },
    ]);
  });

  test("startsOver names the events that begin the view anew, and only them", () => {
    const view = fold(stamp(turn));
    const [started, history, reset, queued] = stamp(
      [
        { type: "thread.started", thread },
        { type: "thread.history", items: [] },
        { type: "thread.history", items: [], reset: true },
        { type: "turn.queued", input: "x" },
      ],
      50,
    );
    expect([started, history, reset, queued].map((event) => startsOver(view, event!))).toEqual([
      true,
      false,
      true,
      false,
    ]);
    const otherEpoch = stamp([{ type: "turn.queued", input: "x" }], 50, "ep_2")[0]!;
    expect(startsOver(view, otherEpoch)).toBe(true);
    expect(startsOver(emptyView(), otherEpoch)).toBe(false);
  });
});

describe("steers are marked by turn.steered, never by text", () => {
  test("the next new user message after turn.steered is a steer", () => {
    const view = fold(
      stamp([
        ...turn,
        { type: "turn.steered", turn_id: "t1", input: "shorter" },
        { type: "item.completed", turn_id: "t1", item: user("u2", "shorter") },
        { type: "item.completed", turn_id: "t1", item: user("u2", "shorter") },
      ]),
    );
    expect(view.entries.filter((entry) => entry.kind === "user")).toEqual([
      { kind: "user", id: "u1", text: "hi", steer: false },
      { kind: "user", id: "u2", text: "shorter", steer: true },
    ]);
    expect(view.pendingSteers).toBe(0);
  });

  test("a later message with the same text as a steer is not a steer", () => {
    const view = fold(
      stamp([
        ...turn,
        { type: "turn.steered", turn_id: "t1", input: "again" },
        { type: "item.completed", turn_id: "t1", item: user("u2", "again") },
        done,
        { type: "turn.started", turn_id: "t2", input: "again" },
        { type: "item.completed", turn_id: "t2", item: user("u3", "again") },
      ]),
    );
    const users = view.entries.filter((entry) => entry.kind === "user");
    expect(users.map((entry) => entry.kind === "user" && entry.steer)).toEqual([false, true, false]);
  });

  test("a steer announced at the turn's end does not mark the next turn's message", () => {
    const view = fold(
      stamp([
        ...turn,
        { type: "turn.steered", turn_id: "t1", input: "late" },
        done,
        { type: "turn.started", turn_id: "t2", input: "next" },
        { type: "item.completed", turn_id: "t2", item: user("u2", "next") },
      ]),
    );
    expect(view.entries.find((entry) => entry.id === "u2")).toMatchObject({ steer: false });
  });
});

describe("the queue", () => {
  const queued: Unstamped[] = [
    ...turn,
    { type: "turn.queued", input: "second" },
    { type: "turn.queued", input: "third" },
  ];

  test("turn.queued appends; the head leaves when its turn starts", () => {
    expect(fold(stamp(queued)).queued).toEqual(["second", "third"]);
    const view = fold(stamp([...queued, done, { type: "turn.started", turn_id: "t2", input: "second" }]));
    expect(view.queued).toEqual(["third"]);
  });

  test("a turn started with other input leaves the queue as it is (not matched further down)", () => {
    const view = fold(stamp([...queued, done, { type: "turn.started", turn_id: "t2", input: "third" }]));
    expect(view.queued).toEqual(["second", "third"]);
  });

  test("a failed turn keeps the queue: the queued messages still run next", () => {
    const error = { type: "server_error", code: "server_error", message: "boom", param: null } as const;
    const view = fold(
      stamp([...queued, { type: "turn.completed", turn_id: "t1", status: "failed", stats, error }]),
    );
    expect(view.queued).toEqual(["second", "third"]);
    expect(notices(view)).toEqual(["Error: boom"]);
    expect(view.turns.at(-1)).toEqual({ id: "t1", status: "failed", stats, error, after: 2 });
  });

  test("a failed turn without an error object says so", () => {
    const view = fold(stamp([...turn, { type: "turn.completed", turn_id: "t1", status: "failed", stats }]));
    expect(notices(view)).toEqual(["Error: the turn failed."]);
  });

  test("an interrupt drops the queue and says how much", () => {
    const view = fold(
      stamp([...queued, { type: "turn.completed", turn_id: "t1", status: "interrupted", stats }]),
    );
    expect(view.queued).toEqual([]);
    expect(notices(view)).toEqual(["Interrupted. 2 queued messages dropped."]);
    const alone = fold(
      stamp([...turn, { type: "turn.completed", turn_id: "t1", status: "interrupted", stats }]),
    );
    expect(notices(alone)).toEqual(["Interrupted."]);
  });
});

describe("thread.history is the whole thread", () => {
  test("the first history replaces the entries", () => {
    const view = fold(
      stamp([
        { type: "thread.started", thread },
        { type: "thread.history", items: [user("u1", "hi"), agent("a1", "Hello")] },
      ]),
    );
    expect(view.entries).toEqual([
      { kind: "user", id: "u1", text: "hi", steer: false },
      { kind: "agent", id: "a1", text: "Hello", streaming: false },
    ]);
  });

  test("a reset replaces everything, takes its thread info, and live events follow", () => {
    const before = fold(stamp([...turn, { type: "turn.queued", input: "q" }]));
    const renamed = { ...thread, title: "Resumed" };
    const after = fold(
      stamp(
        [
          {
            type: "thread.history",
            items: [user("u1", "hi"), agent("a1", "Hello there friend!")],
            reset: true,
            thread: renamed,
          },
          { type: "turn.started", turn_id: "t2", input: "more" },
        ],
        40,
      ),
      before,
    );
    expect(after.info).toEqual(renamed);
    expect(after.entries).toHaveLength(2);
    expect(after.entries[1]).toMatchObject({ text: "Hello there friend!", streaming: false });
    expect(after.queued).toEqual([]);
    expect(after.turn?.id).toBe("t2");
    expect(after.lastSeq).toBe(41);
  });

  test("a reset at a lower seq is still applied (the host could not continue)", () => {
    const before = fold(stamp(turn));
    const after = reduceView(before, stamp([{ type: "thread.history", items: [], reset: true }], 2)[0]!, 1);
    expect(after.entries).toEqual([]);
    expect(after.info).toEqual(thread);
  });
});

describe("replays and epochs", () => {
  test("an event at or below the last seq is ignored: the same view comes back", () => {
    const view = fold(stamp(turn));
    const replayed = stamp(turn, 0);
    for (const event of replayed.slice(1)) expect(reduceView(view, event, 9999)).toBe(view);
  });

  test("an event of another epoch starts the view over, keeping the thread's info", () => {
    const view = fold(stamp(turn));
    const next = reduceView(view, stamp([{ type: "turn.queued", input: "x" }], 0, "ep_2")[0]!, 1);
    expect(next.entries).toEqual([]);
    expect(next.info).toEqual(thread);
    expect(next.queued).toEqual(["x"]);
    expect(next.epoch).toBe("ep_2");
  });

  test("thread.started starts the view over (a replay from the start)", () => {
    const view = fold(stamp([...turn, { type: "thread.started", thread }], 0));
    expect(view.entries).toEqual([]);
    expect(view.turn).toBeNull();
  });
});

describe("approvals", () => {
  const ask = (id: string, turnId = "t1"): Unstamped => ({
    type: "approval.requested",
    turn_id: turnId,
    approval_id: id,
    kind: "shell",
    command: `echo ${id}`,
    cwd: "/w",
    sandbox: "workspace-write",
  });

  test("requested approvals wait; approval.resolved removes one and notes the answer", () => {
    const waiting = fold(stamp([...turn, ask("ap1"), ask("ap2")]));
    expect(waiting.approvals.map((approval) => approval.approval_id)).toEqual(["ap1", "ap2"]);
    expect(waiting.approvals[0]).toEqual({
      turn_id: "t1",
      approval_id: "ap1",
      kind: "shell",
      command: "echo ap1",
      cwd: "/w",
      sandbox: "workspace-write",
    });
    const answered = fold(
      stamp(
        [
          { type: "approval.resolved", approval_id: "ap1", approved: true },
          { type: "approval.resolved", approval_id: "ap2", approved: false },
        ],
        turn.length + 2,
      ),
      waiting,
    );
    expect(answered.approvals).toEqual([]);
    expect(answered.entries.slice(-2)).toEqual([
      { kind: "notice", id: "notice-1", text: "Approved: $ echo ap1", tone: "dim" },
      { kind: "notice", id: "notice-2", text: "Denied: $ echo ap2", tone: "warn" },
    ]);
  });

  test("an unknown approval.resolved changes only nothing visible", () => {
    const view = fold(stamp([...turn, { type: "approval.resolved", approval_id: "nope", approved: true }]));
    expect(notices(view)).toEqual([]);
  });

  test("a turn's approvals are cleared when it ends; another's (a sub-agent's) stay", () => {
    const view = fold(stamp([...turn, ask("ap1"), ask("sub", "sub_turn"), done]));
    expect(view.approvals.map((approval) => approval.approval_id)).toEqual(["sub"]);
  });
});

describe("patches", () => {
  const applied: Unstamped[] = [...turn, { type: "item.completed", turn_id: "t1", item: patchItem }];

  test("patch.resolved marks one file of its call", () => {
    const view = fold(
      stamp([
        ...applied,
        { type: "patch.resolved", item_id: "call_1", path: "a.ts", resolution: "rejected" },
      ]),
    );
    const entry = view.entries.find((candidate) => candidate.id === "call_1");
    expect(entry).toMatchObject({ kind: "tool", files: { "a.ts": "rejected" } });
    expect(diffOf(entry!)?.map((file) => file.path)).toEqual(["a.ts", "new.ts"]);
  });

  test("patch.undone marks the restored files (a move by its source too) and notes it", () => {
    const view = fold(
      stamp([...applied, { type: "patch.undone", item_id: "call_1", paths: ["a.ts", "old.ts"] }]),
    );
    expect(view.entries.find((entry) => entry.id === "call_1")).toMatchObject({
      files: { "a.ts": "undone", "new.ts": "undone" },
    });
    expect(notices(view)).toEqual(["Undone: a.ts, old.ts"]);
  });

  test("patch.undone without an item only notes it", () => {
    const view = fold(stamp([...applied, { type: "patch.undone", item_id: null, paths: ["a.ts"] }]));
    expect(view.entries.find((entry) => entry.id === "call_1")).toMatchObject({ files: {} });
    expect(notices(view)).toEqual(["Undone: a.ts"]);
  });

  test("a face's own hunk review (local.patch) marks the file, and survives the call's completion", () => {
    let view = fold(stamp(applied));
    view = reduceView(
      view,
      { type: "local.patch", itemId: "call_1", path: "a.ts", state: "partly accepted" },
      1,
    );
    view = fold(stamp([{ type: "item.completed", turn_id: "t1", item: patchItem }], applied.length), view);
    expect(view.entries.find((entry) => entry.id === "call_1")).toMatchObject({
      files: { "a.ts": "partly accepted" },
    });
  });

  test("diffOf is null for a running call or a call without a diff", () => {
    const view = fold(
      stamp([
        ...turn,
        { type: "item.started", turn_id: "t1", item: { ...patchItem, status: "running" } as ThreadItem },
      ]),
    );
    expect(diffOf(view.entries.at(-1)!)).toBeNull();
    expect(diffOf(view.entries[0]!)).toBeNull();
  });
});

describe("sub-agents", () => {
  const sub = {
    id: "sub_1",
    task: "count files",
    model: "m",
    status: "running",
    outputTokens: 0,
    progress: "",
  } as const;

  test("started, progress and completed update one sub-agent, with notices at start and end", () => {
    const view = fold(
      stamp([
        ...turn,
        { type: "subagent.started", subagent: sub },
        { type: "subagent.progress", subagent_id: "sub_1", output_tokens: 7, progress: "read_file" },
        { type: "subagent.completed", subagent_id: "sub_1", status: "completed", result: "42 files" },
      ]),
    );
    expect(view.subAgents).toEqual([
      { ...sub, status: "completed", outputTokens: 7, progress: "read_file", result: "42 files" },
    ]);
    expect(notices(view)).toEqual(["Sub-agent sub_1 started: count files", "Sub-agent sub_1 finished"]);
  });

  test("a failed sub-agent keeps its error and says it in red", () => {
    const view = fold(
      stamp([
        { type: "subagent.started", subagent: sub },
        { type: "subagent.completed", subagent_id: "sub_1", status: "failed", error: "no model" },
      ]),
    );
    expect(view.subAgents[0]).toMatchObject({ status: "failed", error: "no model" });
    expect(view.entries.at(-1)).toMatchObject({ text: "Sub-agent sub_1 failed: no model", tone: "error" });
  });
});

describe("a newer host never crashes an older face", () => {
  test("an unknown event is ignored with one notice per type", () => {
    const unknown = { type: "thread.sparkled", level: 3 } as unknown as Unstamped;
    const view = fold(stamp([...turn, unknown, unknown]));
    expect(notices(view)).toEqual([
      'This view does not know the event "thread.sparkled" (a newer Spark?); it was ignored.',
    ]);
    expect(view.lastSeq).toBe(turn.length + 1);
  });

  test("an unknown item becomes a notice entry", () => {
    const item = { type: "image", id: "i1", url: "x" } as unknown as ThreadItem;
    const view = fold(
      stamp([
        { type: "thread.started", thread },
        { type: "item.completed", turn_id: "t1", item },
      ]),
    );
    expect(view.entries).toEqual([
      {
        kind: "notice",
        id: "i1",
        text: 'This view does not know the item "image" (a newer Spark?).',
        tone: "warn",
      },
    ]);
  });
});

describe("the live meter: one formula everywhere", () => {
  test("before any turn there is no meter", () => {
    expect(liveMeter(emptyView(), 0)).toBeNull();
    expect(meterText(emptyView(), 0)).toBe("");
  });

  test("while streaming: elapsed, ttft from the first delta, (deltas - 1) over the delta span", () => {
    const clock = { now: 0 };
    // turn.started at 200, deltas at 500, 600, 700 (the clock steps 100 per event).
    const view = fold(stamp(turn), emptyView(), clock);
    expect(liveMeter(view, 1200)).toEqual({ elapsedMs: 1000, ttftMs: 300, tokensPerSecond: 10, live: true });
    expect(meterText(view, 1200)).toBe("1.0 s · ttft 300 ms · ~10.0 tok/s");
  });

  test("no rate until the deltas span 200 ms", () => {
    const view = fold(stamp(turn.slice(0, 6)));
    expect(liveMeter(view, 1000)?.tokensPerSecond).toBeNull();
  });

  test("a tool call as the first output settles the time to first token", () => {
    const call: ThreadItem = {
      type: "tool_call",
      id: "c1",
      name: "list",
      arguments: "{}",
      status: "running",
    };
    const view = fold(stamp([...turn.slice(0, 2), { type: "item.started", turn_id: "t1", item: call }]));
    expect(liveMeter(view, 1000)?.ttftMs).toBe(100);
  });

  test("after the turn: the agent's own numbers", () => {
    const view = fold(stamp([...turn, done]));
    expect(liveMeter(view, 5000)).toEqual({
      elapsedMs: null,
      ttftMs: 120,
      tokensPerSecond: 31.5,
      live: false,
    });
    expect(meterText(view, 5000)).toBe("ttft 120 ms · 31.5 tok/s");
  });
});

test("local.notice adds a notice with an id of its own", () => {
  const view = reduceView(
    reduceView(emptyView(), { type: "local.notice", text: "a", tone: "info" }, 0),
    { type: "local.notice", text: "b", tone: "error" },
    0,
  );
  expect(view.entries).toEqual([
    { kind: "notice", id: "notice-1", text: "a", tone: "info" },
    { kind: "notice", id: "notice-2", text: "b", tone: "error" },
  ]);
});
