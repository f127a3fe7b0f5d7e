import { describe, expect, test } from "vitest";
import { emptyView, reduceView, type StampedEvent, type ThreadView } from "../../client-core/thread-view.js";
import type { ThreadEvent, TurnStats } from "../../protocol/agent.js";
import type { ConversationView } from "./conversation-store.js";
import { hints, stateLabel, subAgentsLabel, turnMetrics } from "./status-bar.js";

/** Folds events into a core view, each at its time in ms. */
function thread(events: [number, ThreadEvent][]): ThreadView {
  return events.reduce(
    (view, [at, event], seq) =>
      reduceView(view, { ...event, thread_id: "t", seq, epoch: "e" } as StampedEvent, at),
    emptyView("t"),
  );
}
const started: ThreadEvent = { type: "turn.started", turn_id: "t1", input: "hi" };
const message: ThreadEvent = {
  type: "item.started",
  turn_id: "t1",
  item: { type: "agent_message", id: "m", text: "" },
};
const delta: ThreadEvent = { type: "item.delta", turn_id: "t1", item_id: "m", delta: "w " };
const view = (over: Partial<ConversationView>): ConversationView => ({
  entries: [],
  streaming: null,
  running: [],
  approvals: [],
  queued: [],
  phase: "idle",
  subAgents: [],
  thread: emptyView(),
  ...over,
});

describe("status line", () => {
  test("a live estimate while streaming, the agent's numbers once the turn is done", () => {
    expect(turnMetrics(emptyView(), 0)).toEqual([]);
    // 51 deltas from 1120 to 2120: 50 tokens in a second.
    const deltas = Array.from({ length: 51 }, (_, i): [number, ThreadEvent] => [1120 + i * 20, delta]);
    const streaming = thread([[1000, started], [1000, message], ...deltas]);
    expect(turnMetrics(streaming, 2200)).toEqual(["ttft 120 ms", "~50.0 tok/s"]);
    const stats: TurnStats = {
      timeToFirstTokenMs: 95.4,
      tokensPerSecond: 212.6,
      inputTokens: 0,
      cachedInputTokens: 0,
      outputTokens: 0,
    };
    const end = (status: "completed" | "interrupted"): [number, ThreadEvent] => [
      3000,
      { type: "turn.completed", turn_id: "t1", status, stats },
    ];
    expect(turnMetrics(thread([[1000, started], end("completed")]), 0)).toEqual(["ttft 95 ms", "213 tok/s"]);
    expect(turnMetrics(thread([[1000, started], end("interrupted")]), 0)).toContain("last turn interrupted");
  });

  test("state with elapsed time, and the keys that apply", () => {
    expect(stateLabel(view({}), 0)).toBe("idle");
    expect(stateLabel(view({ phase: "thinking", thread: thread([[1000, started]]) }), 2500)).toBe(
      "thinking 1.5s",
    );
    expect(hints(view({}))).toBe("Enter send · Tab queue · /help");
    expect(hints(view({ phase: "streaming" }))).toBe("Esc interrupt · Enter steer · Tab queue · /help");
    expect(
      hints(
        view({
          phase: "waiting for approval",
          approvals: [
            {
              approval_id: "a",
              turn_id: "t",
              kind: "shell",
              command: "ls",
              cwd: "/",
              sandbox: "workspace-write",
            },
          ],
        }),
      ),
    ).toBe("y approve · n deny · Esc interrupt");
  });
});

describe("sub-agents", () => {
  const sub = (id: string, progress: string, outputTokens: number) => ({
    id,
    task: "t",
    model: "deep",
    status: "running" as const,
    progress,
    outputTokens,
  });
  test("a count and the latest one's progress", () => {
    expect(subAgentsLabel(view({}))).toBe("");
    expect(subAgentsLabel(view({ subAgents: [sub("sub_1", "read_file", 12)] }))).toBe(
      "1 sub-agent (sub_1: read_file, 12 tok)",
    );
    expect(
      subAgentsLabel(view({ subAgents: [sub("sub_1", "read_file", 12), sub("sub_2", "writing", 40)] })),
    ).toBe("2 sub-agents (sub_2: writing, 40 tok)");
  });
});
