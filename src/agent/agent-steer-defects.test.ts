import { describe, expect, test } from "vitest";
import type { GenerateRequest } from "../engine/engine.js";
import type { ScriptedReply } from "../engine/scripted/scripted-engine.js";
import type { ThreadEvent, ThreadItem } from "../protocol/agent.js";
import { AgentThread } from "./agent-thread.js";
import { historyFromItems } from "./conversation-history.js";
import { CommandSandbox } from "./sandbox/command-sandbox.js";
import { agentHarness } from "./test-support/agent-harness.js";
import { call } from "./test-support/scripted-replies.js";
import { Workspace } from "./workspace.js";

// Regression tests for the steering defects the host explorer found (src/host/host-explore.model.test.ts),
// each named after the invariant it broke.

const words = (n: number) => Array.from({ length: n }, (_, i) => `word${i}`).join(" ");

/** The thread's items as the faces show them: in the order the items started. */
function shownOrder(events: ThreadEvent[]): string[] {
  const ids: string[] = [];
  for (const event of events) {
    if ((event.type === "item.started" || event.type === "item.completed") && !ids.includes(event.item.id))
      ids.push(event.item.id);
  }
  return ids;
}

const summary = (items: readonly ThreadItem[]) =>
  items.map((item) =>
    item.type === "user_message" || item.type === "agent_message"
      ? `${item.type} ${item.text.slice(0, 20)}`
      : item.type,
  );

const notices = (events: ThreadEvent[]) =>
  events.flatMap((e) => (e.type === "item.completed" && e.item.type === "notice" ? [e.item.text] : []));

/** Whether the model was ever sent `text` as a user message. */
const modelSaw = (requests: GenerateRequest[], text: string) =>
  requests.some((request) => request.messages.some((m) => m.role === "user" && m.content.includes(text)));

describe("steering defects found by the host explorer", () => {
  test("transcript-order: a steer is recorded after the partial reply it interrupted, as the model read it", async () => {
    const seen: GenerateRequest[] = [];
    const script = (request: GenerateRequest): ScriptedReply => {
      seen.push(request);
      const last = request.messages.at(-1);
      return { text: last?.content === "use tabs instead" ? "Switching to tabs." : words(400) };
    };
    await using h = await agentHarness({ "a.txt": "a" }, { script, tokensPerSecond: 400 });
    const firstDelta = h.next("item.delta");
    const turn = h.thread.startTurn("indent the file");
    await firstDelta;
    h.thread.submit("use tabs instead");
    await turn;

    const items = h.thread.history;
    expect(summary(items)).toEqual([
      "user_message indent the file",
      expect.stringMatching(/^agent_message word0/),
      "user_message use tabs instead",
      "agent_message Switching to tabs.",
    ]);
    // The faces' order, the items' (what the transcript appends) and the model's are one order.
    expect(items.map((item) => item.id)).toEqual(shownOrder(h.events));
    const completed = h.events.flatMap((e) => (e.type === "item.completed" ? [e.item.id] : []));
    expect(completed).toEqual(items.map((item) => item.id));
    const continuation = seen.at(-1)!.messages.slice(-2);
    expect(continuation).toEqual([
      { role: "assistant", content: (items[1] as { text: string }).text },
      { role: "user", content: "use tabs instead" },
    ]);
    // A resumed session sends the conversation in that order too.
    expect(historyFromItems(items).slice(1, 3)).toEqual(continuation);
  });

  test("transcript-order: a steer sent while a tool runs is recorded after the call whose output it follows", async () => {
    const seen: GenerateRequest[] = [];
    const script = (request: GenerateRequest): ScriptedReply => {
      seen.push(request);
      return seen.length === 1 ? call("shell", { command: "true" }) : { text: "Looked at both." };
    };
    await using h = await agentHarness(
      { "a.txt": "a" },
      { script },
      { sandbox: new CommandSandbox({ mode: "danger-full-access" }) },
    );
    const approval = h.next("approval.requested");
    const turn = h.thread.startTurn("explain a.txt");
    const request = await approval;
    h.thread.submit("also look at b.txt");
    h.thread.respondToApproval(request.approval_id, true);
    await turn;

    expect(summary(h.thread.history)).toEqual([
      "user_message explain a.txt",
      "tool_call",
      "user_message also look at b.txt",
      "agent_message Looked at both.",
    ]);
    expect(h.thread.history.map((item) => item.id)).toEqual(shownOrder(h.events));
    expect(seen[1]!.messages.slice(-2).map((m) => m.role)).toEqual(["tool", "user"]);
    // The steer is marked as one (pickers list it with the turn it steered); the first message is not.
    const users = h.thread.history.filter((item) => item.type === "user_message");
    expect(users.map((item) => item.steer)).toEqual([undefined, true]);
  });

  test("steer-lost-on-interrupt: a steer accepted and then dropped by an interrupt is reported as not sent", async () => {
    const seen: GenerateRequest[] = [];
    const script = (request: GenerateRequest): ScriptedReply => {
      seen.push(request);
      return { text: words(50) };
    };
    // Four tokens a second: the steered response ends at its next token, well after the cancel
    // sent as the steer is accepted reaches the server, so no successor starts.
    await using h = await agentHarness({ "a.txt": "a" }, { script, tokensPerSecond: 4 });
    const steer = h.client.steer.bind(h.client);
    let accepted = false;
    h.client.steer = async (stream, input) => {
      const outcome = await steer(stream, input);
      accepted = outcome.status === "accepted";
      if (accepted) h.thread.interrupt();
      return outcome;
    };
    const firstDelta = h.next("item.delta");
    const turn = h.thread.startTurn("explain a.txt");
    await firstDelta;
    h.thread.submit("be brief");
    await turn;

    expect(accepted).toBe(true);
    expect(h.events.find((e) => e.type === "turn.completed")).toMatchObject({ status: "interrupted" });
    expect(modelSaw(seen, "be brief")).toBe(false);
    expect(notices(h.events)).toEqual([
      'Not sent to the model (the turn was interrupted): "be brief". Send it again if it still applies.',
    ]);
    expect(h.thread.history.some((item) => item.type === "user_message" && item.text === "be brief")).toBe(
      false,
    );
  });

  test("unsent-steer-sent-later: a steer reported not sent is not in the conversation a later request sends", async () => {
    const seen: GenerateRequest[] = [];
    const script = (request: GenerateRequest): ScriptedReply => {
      seen.push(request);
      return { text: seen.length === 1 ? words(400) : "Going on." };
    };
    await using h = await agentHarness({ "a.txt": "a" }, { script, tokensPerSecond: 400 });
    const firstDelta = h.next("item.delta");
    const turn = h.thread.startTurn("explain a.txt");
    await firstDelta;
    h.thread.interrupt();
    // The interrupted turn is still winding down: the steer goes to it, and cannot be sent.
    h.thread.submit("be brief");
    await turn;
    expect(notices(h.events)).toEqual([
      'Not sent to the model (the turn was interrupted): "be brief". Send it again if it still applies.',
    ]);
    expect(historyFromItems(h.thread.history)).not.toContainEqual({ role: "user", content: "be brief" });

    // A resumed session (as a fork or `spark --resume` makes one) sends the saved conversation.
    const resumed = new AgentThread({
      client: h.client,
      workspace: new Workspace(h.dir),
      instructions: "You are Spark.",
      resume: { thread: { ...h.thread.info }, items: [...h.thread.history] },
    });
    await resumed.startTurn("go on");
    expect(seen).toHaveLength(2);
    expect(modelSaw(seen, "be brief")).toBe(false);
    expect(seen[1]!.messages.at(-1)).toEqual({ role: "user", content: "go on" });
  });

  test("nothing-after-end: a tool still winding down after an interrupt never asks for approval", async () => {
    let reached!: () => void;
    const reachedSandbox = new Promise<void>((resolve) => {
      reached = resolve;
    });
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    /** Holds the shell tool before it asks for approval, until the turn has ended. */
    class GatedSandbox extends CommandSandbox {
      override async ensureAvailable(): Promise<void> {
        reached();
        await gate;
      }
    }
    const script = (): ScriptedReply => call("shell", { command: "true" });
    await using h = await agentHarness(
      { "a.txt": "a" },
      { script },
      { sandbox: new GatedSandbox({ mode: "danger-full-access" }) },
    );
    const turn = h.thread.startTurn("run it");
    await reachedSandbox;
    h.thread.interrupt();
    await turn;
    const ended = h.events.findIndex((e) => e.type === "turn.completed");
    expect(h.events[ended]).toMatchObject({ status: "interrupted" });

    open();
    // The tool's call to approve() runs in the microtasks after the gate opens.
    await new Promise((resolve) => setImmediate(resolve));
    expect(h.events.slice(ended + 1)).toEqual([]);
    expect(h.events.some((e) => e.type === "approval.requested")).toBe(false);
  });
});
