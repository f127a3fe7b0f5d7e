import { describe, expect, test } from "vitest";
import type { ConversationView, TurnMeter } from "./conversation-store.js";
import { hints, stateLabel, subAgentsLabel, turnMetrics } from "./status-bar.js";

const meter = (over: Partial<TurnMeter>): TurnMeter => ({
  startedAt: 1000,
  firstTokenAt: null,
  message: null,
  endedAt: null,
  status: null,
  stats: null,
  ...over,
});
const view = (over: Partial<ConversationView>): ConversationView => ({
  entries: [],
  streaming: null,
  running: [],
  approvals: [],
  queued: [],
  phase: "idle",
  turn: null,
  subAgents: [],
  ...over,
});

describe("status line", () => {
  test("a live estimate while streaming, the agent's numbers once the turn is done", () => {
    expect(turnMetrics(null, 0)).toEqual([]);
    expect(
      turnMetrics(meter({ firstTokenAt: 1120, message: { firstAt: 1120, lastAt: 2120, deltas: 51 } }), 2200),
    ).toEqual(["ttft 120 ms", "~50.0 tok/s"]);
    const stats = {
      timeToFirstTokenMs: 95.4,
      tokensPerSecond: 212.6,
      inputTokens: 0,
      cachedInputTokens: 0,
      outputTokens: 0,
    };
    expect(turnMetrics(meter({ stats, status: "completed", endedAt: 3000 }), 0)).toEqual([
      "ttft 95 ms",
      "213 tok/s",
    ]);
    expect(turnMetrics(meter({ stats, status: "interrupted", endedAt: 3000 }), 0)).toContain(
      "last turn interrupted",
    );
  });

  test("state with elapsed time, and the keys that apply", () => {
    expect(stateLabel(view({}), 0)).toBe("idle");
    expect(stateLabel(view({ phase: "thinking", turn: meter({}) }), 2500)).toBe("thinking 1.5s");
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
