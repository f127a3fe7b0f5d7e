import { describe, expect, test } from "vitest";
import type { GenerateRequest } from "../engine/engine.js";
import type { ScriptedReply } from "../engine/scripted/scripted-engine.js";
import type { ThreadEvent, ThreadItem } from "../protocol/agent.js";
import { CommandSandbox } from "./sandbox/command-sandbox.js";
import { agentHarness, type Harness } from "./test-support/agent-harness.js";
import { call } from "./test-support/scripted-replies.js";

const agentTexts = (events: ThreadEvent[]) =>
  events.flatMap((e) =>
    e.type === "item.completed" && e.item.type === "agent_message" ? [e.item.text] : [],
  );

const notices = (events: ThreadEvent[]) =>
  events.flatMap((e) => (e.type === "item.completed" && e.item.type === "notice" ? [e.item.text] : []));

/** Whether the model was ever sent `text` as a message. */
const modelSaw = (requests: GenerateRequest[], text: string) =>
  requests.some((request) => request.messages.some((m) => m.content.includes(text)));

/** Resolves with the next notice item of the thread (from now on). */
function nextNotice(h: Harness): Promise<Extract<ThreadItem, { type: "notice" }>> {
  return new Promise((resolve) => {
    const off = h.thread.on((event) => {
      if (event.type === "item.completed" && event.item.type === "notice") {
        off();
        resolve(event.item);
      }
    });
  });
}

/**
 * Makes the answer to every steer arrive as a server's would when the steer crossed the response's
 * end on the wire: after the response has ended, in a later I/O turn than its last event (by then
 * the agent has handled that end). The race, made certain.
 */
function answerSteersLate(h: Harness): void {
  const steer = h.client.steer.bind(h.client);
  h.client.steer = async (stream, input) => {
    await stream.final.catch(() => {});
    await new Promise((resolve) => setImmediate(resolve));
    return steer(stream, input);
  };
}

describe("steers that race the end of a response", () => {
  test("a steer that arrives as the response ends starts the next response", async () => {
    const seen: GenerateRequest[] = [];
    const script = (request: GenerateRequest): ScriptedReply => {
      seen.push(request);
      const last = request.messages.at(-1);
      return {
        text:
          last?.role === "user" && last.content === "use tabs instead" ? "Switching to tabs." : "Indented.",
      };
    };
    await using h = await agentHarness({ "a.txt": "a" }, { script });
    answerSteersLate(h);
    const firstDelta = h.next("item.delta");
    const turn = h.thread.startTurn("indent the file");
    await firstDelta;
    h.thread.submit("use tabs instead");
    await turn;
    // The refused steer went out as the next request of the same turn, after the finished answer.
    expect(seen).toHaveLength(2);
    expect(seen[1]!.messages.slice(-2)).toEqual([
      { role: "assistant", content: "Indented." },
      { role: "user", content: "use tabs instead" },
    ]);
    expect(agentTexts(h.events)).toEqual(["Indented.", "Switching to tabs."]);
    expect(h.events.filter((e) => e.type === "turn.started")).toHaveLength(1);
    expect(h.events.find((e) => e.type === "turn.completed")).toMatchObject({ status: "completed" });
    expect(notices(h.events)).toEqual([]);
  });

  test("a steer sent with the response's last token reaches the model, whichever side of the end it lands", async () => {
    const answer = "one two three four";
    const seen: GenerateRequest[] = [];
    const script = (request: GenerateRequest): ScriptedReply => {
      seen.push(request);
      const last = request.messages.at(-1);
      return { text: last?.role === "user" && last.content === "in French" ? "Un deux trois." : answer };
    };
    await using h = await agentHarness({ "a.txt": "a" }, { script });
    let streamed = "";
    h.thread.on((event) => {
      if (event.type !== "item.delta") return;
      streamed += event.delta;
      if (streamed === answer) h.thread.submit("in French");
    });
    await h.thread.startTurn("count to four");
    // Accepted (a successor continues with it) or refused (the next response starts with it).
    expect(seen.at(-1)!.messages.at(-1)).toEqual({ role: "user", content: "in French" });
    expect(agentTexts(h.events).at(-1)).toBe("Un deux trois.");
    expect(h.events.filter((e) => e.type === "turn.started")).toHaveLength(1);
    expect(notices(h.events)).toEqual([]);
  });

  test("a steer waiting for the next request when the turn is interrupted is reported as not sent", async () => {
    const seen: GenerateRequest[] = [];
    const script = (request: GenerateRequest): ScriptedReply => {
      seen.push(request);
      return seen.length === 1 ? call("shell", { command: "true" }) : { text: "ok" };
    };
    await using h = await agentHarness(
      { "a.txt": "a" },
      { script },
      { sandbox: new CommandSandbox({ mode: "danger-full-access" }) },
    );
    const approval = h.next("approval.requested");
    const turn = h.thread.startTurn("explain a.txt");
    await approval;
    // While the command waits for approval the steer waits for the request after it.
    h.thread.submit("also look at b.txt");
    h.thread.interrupt();
    await turn;
    const shown = notices(h.events);
    expect(shown).toEqual([expect.stringContaining('"also look at b.txt"')]);
    expect(shown[0]).toMatch(/^Not sent to the model \(the turn was interrupted\)/);
    const noticeAt = h.events.findIndex((e) => e.type === "item.completed" && e.item.type === "notice");
    expect(noticeAt).toBeLessThan(h.events.findIndex((e) => e.type === "turn.completed"));
    expect(modelSaw(seen, "also look at b.txt")).toBe(false);
  });

  test("a steer refused after its turn was interrupted is reported as not sent", async () => {
    const long = Array.from({ length: 400 }, (_, i) => `word${i}`).join(" ");
    const seen: GenerateRequest[] = [];
    const script = (request: GenerateRequest): ScriptedReply => {
      seen.push(request);
      return { text: long };
    };
    await using h = await agentHarness({ "a.txt": "a" }, { script, tokensPerSecond: 400 });
    answerSteersLate(h);
    const firstDelta = h.next("item.delta");
    const turn = h.thread.startTurn("explain a.txt");
    await firstDelta;
    const notice = nextNotice(h);
    h.thread.submit("be brief");
    h.thread.interrupt();
    await turn;
    expect(h.events.find((e) => e.type === "turn.completed")).toMatchObject({ status: "interrupted" });
    expect((await notice).text).toMatch(/^Not sent to the model \(the turn was interrupted\): "be brief"/);
    expect(modelSaw(seen, "be brief")).toBe(false);
  });

  test("a message sent once the turn has decided to end starts the next turn instead of joining it", async () => {
    const seen: GenerateRequest[] = [];
    const script = (request: GenerateRequest): ScriptedReply => {
      seen.push(request);
      return seen.length === 1 ? call("shell", { command: "true" }) : { text: "Summary." };
    };
    await using h = await agentHarness(
      { "a.txt": "a" },
      { script },
      { sandbox: new CommandSandbox({ mode: "danger-full-access" }) },
    );
    const approval = h.next("approval.requested");
    const turn = h.thread.startTurn("explain a.txt");
    await approval;
    h.thread.submit("also look at b.txt");
    // The "not sent" notice comes while the ending turn is still the thread's: a face answering it
    // at once sends into a turn that takes nothing more.
    const off = h.thread.on((event) => {
      if (event.type === "item.completed" && event.item.type === "notice") {
        off();
        h.thread.submit("then summarize");
      }
    });
    h.thread.interrupt();
    await turn;
    expect(h.events.filter((e) => e.type === "turn.started").map((e) => e.input)).toEqual([
      "explain a.txt",
      "then summarize",
    ]);
    expect(h.events.some((e) => e.type === "turn.steered" && e.input === "then summarize")).toBe(false);
    expect(seen.at(-1)!.messages.at(-1)).toEqual({ role: "user", content: "then summarize" });
    expect(agentTexts(h.events).at(-1)).toBe("Summary.");
  });
});
