import { describe, expect, test } from "vitest";
import type { StampedEvent } from "../../client-core/thread-view.js";
import type { ThreadEvent, TurnStats } from "../../protocol/agent.js";
import { ConversationStore, type Entry } from "./conversation-store.js";

const T = "turn_1";
const STATS: TurnStats = {
  timeToFirstTokenMs: 12,
  tokensPerSecond: 80,
  inputTokens: 10,
  cachedInputTokens: 0,
  outputTokens: 5,
};

function storeWithClock() {
  const clock = { now: 0 };
  const store = new ConversationStore({ now: () => clock.now });
  const apply = (...events: Parameters<ConversationStore["apply"]>[0][]) => {
    for (const event of events) store.apply(event);
    store.flush();
    return store.getSnapshot();
  };
  return { store, clock, apply };
}

const started: ThreadEvent = { type: "turn.started", turn_id: T, input: "hi" };
const message = (id = "m1"): ThreadEvent => ({
  type: "item.started",
  turn_id: T,
  item: { type: "agent_message", id, text: "" },
});
const delta = (text: string, id = "m1"): ThreadEvent => ({
  type: "item.delta",
  turn_id: T,
  item_id: id,
  delta: text,
});
const done = (text: string, id = "m1"): ThreadEvent => ({
  type: "item.completed",
  turn_id: T,
  item: { type: "agent_message", id, text },
});
const agentTexts = (entries: readonly Entry[]) =>
  entries.flatMap((e) => (e.kind === "agent" ? [e.text] : []));

describe("ConversationStore", () => {
  test("finished lines of a streaming message become entries at once; the partial line stays live", () => {
    const { apply } = storeWithClock();
    let view = apply(started, message(), delta("Hello"), delta(" world"));
    expect(view.phase).toBe("streaming");
    expect(view.streaming).toEqual({ text: "Hello world", continued: false, fenced: null });
    expect(agentTexts(view.entries)).toEqual([]);
    view = apply(delta(".\nNext"));
    expect(agentTexts(view.entries)).toEqual(["Hello world."]);
    expect(view.streaming).toMatchObject({ text: "Next", continued: true });
    view = apply(delta(" line\n\n"), delta("\nThird"), done("Hello world.\nNext line\n\n\nThird"));
    expect(agentTexts(view.entries)).toEqual(["Hello world.", "Next line", "\n\nThird"]);
    expect(view.entries.filter((e) => e.kind === "agent").map((e) => e.kind === "agent" && e.first)).toEqual([
      true,
      false,
      false,
    ]);
    expect(view.streaming).toBeNull();
    expect(view.phase).toBe("thinking");
  });

  test("reasoning: the phase stays thinking while it streams; once complete it prints dimmed before the answer", () => {
    const { apply } = storeWithClock();
    const thought = (type: "item.started" | "item.completed", text: string): ThreadEvent => ({
      type,
      turn_id: T,
      item: { type: "reasoning", id: "r1", text },
    });
    let view = apply(started, thought("item.started", ""), delta("Mull it", "r1"));
    expect(view.phase).toBe("thinking");
    expect(view.entries.filter((e) => e.kind === "notice")).toEqual([]);
    view = apply(thought("item.completed", "Mull it over."), message(), delta("Answer.\n"));
    const printed = view.entries.filter((e) => e.kind === "notice" || e.kind === "agent");
    expect(printed).toMatchObject([
      { kind: "notice", text: "Mull it over.", tone: "dim" },
      { kind: "agent", text: "Answer." },
    ]);
  });

  test("leading and trailing blank lines of a message are dropped", () => {
    const { apply } = storeWithClock();
    let view = apply(
      started,
      message(),
      delta("\n\n  indented\n"),
      delta("end\n\n\n"),
      done("\n\n  indented\nend\n\n\n"),
    );
    expect(agentTexts(view.entries)).toEqual(["  indented", "end"]);
    view = apply(
      message("m2"),
      delta("\n    one line of code  ", "m2"),
      done("\n    one line of code  ", "m2"),
    );
    expect(agentTexts(view.entries).at(-1)).toBe("    one line of code");
  });

  test("remembers whether a chunk starts inside a code block", () => {
    const { apply } = storeWithClock();
    const view = apply(
      started,
      message(),
      delta("Code:\n```ts\nconst a = 1;\n"),
      delta("```\nafter\n"),
      done("Code:\n```ts\nconst a = 1;\n```\nafter\n"),
    );
    const chunks = view.entries.filter((e) => e.kind === "agent");
    expect(chunks.map((e) => e.kind === "agent" && [e.text, e.fenced])).toEqual([
      ["Code:\n```ts\nconst a = 1;", null],
      ["```\nafter", "```ts"],
    ]);
  });

  test("publishes once per batch of events", async () => {
    const store = new ConversationStore();
    let published = 0;
    store.subscribe(() => published++);
    store.apply(started);
    store.apply(message());
    for (let i = 0; i < 100; i++) store.apply(delta(`w${i} `));
    expect(published).toBe(0);
    await new Promise<void>((resolve) => store.subscribe(resolve));
    expect(published).toBe(1);
    expect(store.getSnapshot().streaming?.text).toContain("w99");
  });

  test("publishes the end of a turn at once, with the answer's last words", () => {
    const store = new ConversationStore();
    let published = 0;
    store.subscribe(() => published++);
    store.apply(started);
    store.apply(message());
    store.apply(delta("last words"));
    store.apply(done("last words"));
    expect(published).toBe(0);
    store.apply({ type: "turn.completed", turn_id: T, status: "completed", stats: STATS });
    expect(published).toBe(1);
    expect(agentTexts(store.getSnapshot().entries)).toEqual(["last words"]);
    expect(store.getSnapshot().phase).toBe("idle");
    store.dispose();
  });

  test("queued messages show until their turn starts; an interrupt drops them", () => {
    const { apply } = storeWithClock();
    let view = apply(started, { type: "turn.queued", input: "two" }, { type: "turn.queued", input: "three" });
    expect(view.queued).toEqual(["two", "three"]);
    view = apply(
      { type: "turn.completed", turn_id: T, status: "completed", stats: STATS },
      { type: "turn.started", turn_id: "t2", input: "two" },
    );
    expect(view.queued).toEqual(["three"]);
    view = apply({ type: "turn.completed", turn_id: "t2", status: "interrupted", stats: STATS });
    expect(view.queued).toEqual([]);
    expect(view.entries.at(-1)).toMatchObject({
      kind: "notice",
      text: "Interrupted. 1 queued message dropped.",
      tone: "warn",
    });
    expect(view.thread.turns.at(-1)).toMatchObject({ id: "t2", status: "interrupted", stats: STATS });
    expect(view.phase).toBe("idle");
  });

  test("approvals are live until resolved, then noted", () => {
    const { apply, store } = storeWithClock();
    const approval: ThreadEvent = {
      type: "approval.requested",
      turn_id: T,
      approval_id: "a1",
      kind: "shell",
      command: "npm test",
      cwd: "/w",
      sandbox: "workspace-write",
    };
    let view = apply(started, approval);
    expect(view.phase).toBe("waiting for approval");
    expect(store.pendingApproval).toMatchObject({ kind: "shell", command: "npm test" });
    view = apply({ type: "approval.resolved", approval_id: "a1", approved: false });
    expect(view.approvals).toEqual([]);
    expect(view.entries.at(-1)).toMatchObject({ kind: "notice", text: "Denied: $ npm test", tone: "warn" });
  });

  test("sub-agents are listed while they run; their approvals leave an idle thread idle", () => {
    const { apply } = storeWithClock();
    const subagent = {
      id: "sub_1",
      task: "port the lexer",
      model: "deep",
      status: "running" as const,
      outputTokens: 0,
      progress: "starting",
    };
    let view = apply({ type: "subagent.started", subagent });
    expect(view.subAgents).toEqual([subagent]);
    expect(view.entries.at(-1)).toMatchObject({ text: "Sub-agent sub_1 started: port the lexer" });
    view = apply({
      type: "subagent.progress",
      subagent_id: "sub_1",
      output_tokens: 32,
      progress: "read_file",
    });
    expect(view.subAgents[0]).toMatchObject({ outputTokens: 32, progress: "read_file" });
    view = apply({
      type: "approval.requested",
      turn_id: "turn_sub",
      approval_id: "a1",
      kind: "shell",
      command: "make",
      cwd: "/w",
      sandbox: "workspace-write",
    });
    expect(view.phase).toBe("waiting for approval");
    view = apply({ type: "approval.resolved", approval_id: "a1", approved: true });
    expect(view.phase).toBe("idle");
    view = apply({ type: "subagent.completed", subagent_id: "sub_1", status: "failed", error: "boom" });
    expect(view.subAgents).toEqual([]);
    expect(view.entries.at(-1)).toMatchObject({ text: "Sub-agent sub_1 failed: boom", tone: "error" });
  });

  test("a failed turn becomes an error entry; steering marks the next user message", () => {
    const { apply } = storeWithClock();
    const view = apply(
      started,
      { type: "turn.steered", turn_id: T, input: "no, this" },
      { type: "item.completed", turn_id: T, item: { type: "user_message", id: "u", text: "no, this" } },
      {
        type: "turn.completed",
        turn_id: T,
        status: "failed",
        stats: STATS,
        error: { type: "server_error", code: "server_error", message: "boom", param: null },
      },
    );
    expect(view.entries[0]).toMatchObject({ kind: "user", text: "no, this", steer: true });
    expect(view.entries.at(-1)).toMatchObject({ kind: "notice", text: "Error: boom", tone: "error" });
  });

  test("after a steer the interrupted line stays above the steer, not printed below it as its reply", () => {
    const { apply } = storeWithClock();
    let view = apply(started, message(), delta("First line.\nThe answer is"));
    view = apply(
      { type: "turn.steered", turn_id: T, input: "no, this" },
      { type: "item.completed", turn_id: T, item: { type: "user_message", id: "u", text: "no, this" } },
    );
    expect(
      view.entries.map((e) => (e.kind === "user" ? `> ${e.text}` : e.kind === "agent" ? e.text : e.kind)),
    ).toEqual(["First line.", "The answer is", "> no, this"]);
    // Nothing of it is left live below the steer.
    expect(view.streaming).toBeNull();
    // The interrupted message ends as it was; the reply to the steer comes below the steer.
    view = apply(
      done("First line.\nThe answer is"),
      message("m2"),
      delta("Right, this.", "m2"),
      done("Right, this.", "m2"),
    );
    expect(
      view.entries.map((e) => (e.kind === "user" ? `> ${e.text}` : e.kind === "agent" ? e.text : e.kind)),
    ).toEqual(["First line.", "The answer is", "> no, this", "Right, this."]);
    expect(view.entries.filter((e) => e.kind === "agent").map((e) => e.kind === "agent" && e.first)).toEqual([
      true,
      false,
      true,
    ]);
  });

  test("measures time to first token and the live delta rate", () => {
    const { apply, clock } = storeWithClock();
    apply(started, message());
    clock.now = 100;
    apply(delta("a"));
    clock.now = 200;
    const view = apply(delta(" b"), delta(" c"));
    expect(view.thread.turn).toMatchObject({
      startedAt: 0,
      firstTokenAt: 100,
      firstDeltaAt: 100,
      lastDeltaAt: 200,
      deltas: 3,
    });
  });

  test("loads a thread's earlier items, and knows a turn is already running", () => {
    const { store } = storeWithClock();
    store.load(
      [
        { type: "user_message", id: "u", text: "hi" },
        { type: "agent_message", id: "a", text: "hello\n" },
        { type: "tool_call", id: "c", name: "read_file", arguments: "{}", status: "completed" },
      ],
      true,
    );
    store.flush();
    const view = store.getSnapshot();
    expect(view.entries.map((e) => e.kind)).toEqual(["user", "agent", "tool"]);
    expect(view.phase).toBe("thinking");
  });

  test("host events keep their seq: a replayed one is not printed twice", () => {
    const { apply } = storeWithClock();
    const stamp = (event: ThreadEvent, seq: number) =>
      ({ ...event, thread_id: "thr", seq, epoch: "ep" }) as StampedEvent;
    const user = stamp(
      { type: "item.completed", turn_id: T, item: { type: "user_message", id: "u", text: "hi" } },
      1,
    );
    const view = apply(stamp(started, 0), user, user);
    expect(view.entries.map((e) => e.kind === "user" && e.text)).toEqual(["hi"]);
    expect(view.thread.lastSeq).toBe(1);
  });

  test("a view that starts over keeps what is printed and prints the new thread's items", () => {
    const { apply, store } = storeWithClock();
    store.notice("before");
    const view = apply({
      type: "thread.history",
      items: [{ type: "agent_message", id: "a", text: "old answer\n" }],
      reset: true,
    });
    expect(view.entries.map((e) => "text" in e && e.text)).toEqual(["before", "old answer"]);
    store.notice("after");
    store.flush();
    expect(store.getSnapshot().entries.map((e) => "text" in e && e.text)).toEqual([
      "before",
      "old answer",
      "after",
    ]);
  });

  test("a message that arrives whole is printed whole; a notice is not held back by a running tool", () => {
    const { apply } = storeWithClock();
    const tool = { type: "tool_call" as const, id: "c", name: "shell", arguments: "{}" };
    let view = apply(
      started,
      { type: "item.started", turn_id: T, item: { ...tool, status: "running" } },
      { type: "item.completed", turn_id: T, item: { type: "notice", id: "n", text: "Compacted." } },
    );
    expect(view.phase).toBe("running tool");
    expect(view.running.map((item) => item.id)).toEqual(["c"]);
    expect(view.entries.map((e) => e.kind)).toEqual(["notice"]);
    view = apply(
      { type: "item.completed", turn_id: T, item: { ...tool, status: "completed", output: "ok" } },
      { type: "item.completed", turn_id: T, item: { type: "agent_message", id: "a", text: "All done.\n" } },
    );
    expect(view.entries.map((e) => e.kind)).toEqual(["notice", "tool", "agent"]);
    expect(agentTexts(view.entries)).toEqual(["All done."]);
    expect(view.running).toEqual([]);
  });

  test("Esc shows interrupting until the turn ends; it means nothing when idle", () => {
    const { apply, store } = storeWithClock();
    store.markInterrupting();
    expect(store.busy).toBe(false);
    apply(started, message(), delta("x"));
    store.markInterrupting();
    store.flush();
    expect(store.getSnapshot().phase).toBe("interrupting");
    const view = apply({ type: "turn.completed", turn_id: T, status: "interrupted", stats: STATS });
    expect(view.phase).toBe("idle");
    expect(agentTexts(view.entries)).toEqual(["x"]);
  });
});
