import { describe, expect, test } from "vitest";
import type { TurnStats } from "../protocol/agent.js";
import { emptyView, reduceView, type StampedEvent } from "./thread-view.js";

const stats: TurnStats = {
  timeToFirstTokenMs: 120,
  tokensPerSecond: 31.5,
  inputTokens: 10,
  cachedInputTokens: 0,
  outputTokens: 5,
};

const stamped = (events: object[]): StampedEvent[] =>
  events.map((event, seq) => ({ ...event, thread_id: "thr_1", seq, epoch: "ep_1" }) as StampedEvent);

describe("a turn a limit ended, in every face's view", () => {
  test("shows the limit's own message as a warning (not an error) and keeps the reason on the turn", () => {
    const message = 'Stopped: the model was repeating itself ("a\\n" 300 times in a row).';
    const error = { type: "rate_limit_error", code: "limit_reached", message, param: null } as const;
    const view = stamped([
      { type: "turn.started", turn_id: "t1", input: "List the files here." },
      { type: "turn.completed", turn_id: "t1", status: "failed", stats, error, reason: "repetition" },
    ]).reduce((view, event, i) => reduceView(view, event, i * 100), emptyView("thr_1"));
    const notices = view.entries.flatMap((entry) => (entry.kind === "notice" ? [entry] : []));
    expect(notices).toMatchObject([{ text: message, tone: "warn" }]);
    expect(view.turns.at(-1)).toMatchObject({ id: "t1", status: "failed", reason: "repetition", error });
  });
});
