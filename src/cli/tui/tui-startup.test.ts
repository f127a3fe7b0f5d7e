import "./test-support/force-color.js";
import { describe, expect, test } from "vitest";
import type { AgentThread } from "../../agent/agent-thread.js";
import type { GenerateRequest } from "../../engine/engine.js";
import { StartupStatus } from "./startup-status.js";
import { KEYS } from "./test-support/fake-terminal.js";
import { tuiHarness } from "./test-support/tui-harness.js";

function lastUser(request: GenerateRequest): string {
  return [...request.messages].reverse().find((m) => m.role === "user")?.content ?? "";
}

/** A scripted model that records the last user message of every request it gets. */
function recording() {
  const seen: string[] = [];
  const script = (request: GenerateRequest) => {
    seen.push(lastUser(request));
    return { text: `Answer to ${lastUser(request)}.` };
  };
  return { seen, script };
}

/** A promise and the functions that settle it (the test decides when the start ends). */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lines of the prompt box (between its borders). */
function promptLine(frame: string): string {
  return frame.split("\n").find((line) => line.startsWith("│ >")) ?? "";
}

describe("the terminal UI while the session starts (the thread is gated on a promise the test holds)", () => {
  test("takes input at once; a message entered while the model loads runs once, after the start", async () => {
    const { seen, script } = recording();
    await using h = await tuiHarness({}, { script });
    const startup = new StartupStatus();
    const first = deferred<AgentThread>();
    h.mount({ thread: first.promise, startup });
    startup.set({ phase: "loading", fraction: 0.43 });
    const loading = await h.stdout.waitForText("loading model 43%…");
    expect(loading).toContain("messages are sent once the model is ready");

    await h.send("Say hi");
    const queued = await h.stdout.waitForText("queued until ready: Say hi");
    // The Enter was taken: the text left the prompt for the queue, and nothing reached the model.
    expect(promptLine(queued)).not.toContain("Say hi");
    startup.set({ phase: "warming" });
    await h.stdout.waitForText("preparing the agent prompt…");
    startup.set({ phase: "warming", evaluated: 1200, total: 2700 });
    await h.stdout.waitForText("preparing the agent prompt 44% (1,200/2,700 tokens)…");
    expect(seen).toEqual([]);

    startup.set({ phase: "ready" });
    first.resolve(h.thread);
    const done = await h.stdout.waitFor((f) => f.includes("Answer to Say hi.") && f.includes("idle"));
    expect(done).toContain("> Say hi");
    expect(done).not.toContain("queued until ready");
    expect(seen).toEqual(["Say hi"]);
    const users = h.thread.history.filter((item) => item.type === "user_message");
    expect(users.map((item) => item.text)).toEqual(["Say hi"]);
  });

  test("text and Enter typed before the terminal was raw (Enter read as a line feed) are queued, not kept as a new line", async () => {
    const { seen, script } = recording();
    await using h = await tuiHarness({}, { script });
    const first = deferred<AgentThread>();
    h.mount({ thread: first.promise });
    await h.stdin.press("Say hi\n");
    const queued = await h.stdout.waitForText("queued until ready: Say hi");
    expect(promptLine(queued)).not.toContain("Say hi");
    first.resolve(h.thread);
    await h.stdout.waitFor((f) => f.includes("Answer to Say hi.") && f.includes("idle"));
    expect(seen).toEqual(["Say hi"]);
  });

  test("several messages and a first prompt entered during the start run in order, each once", async () => {
    const { seen, script } = recording();
    await using h = await tuiHarness({}, { script, tokensPerSecond: 200 });
    const first = deferred<AgentThread>();
    h.mount({ thread: first.promise, prompt: "one" });
    await h.stdout.waitForText("queued until ready: one");
    await h.send("two");
    await h.send("three", KEYS.tab);
    await h.stdout.waitForText("queued until ready: three");
    first.resolve(h.thread);
    const done = await h.stdout.waitFor(
      (f) => f.includes("Answer to three.") && f.includes("idle") && !f.includes("queued"),
    );
    expect(done.indexOf("> one")).toBeLessThan(done.indexOf("> two"));
    expect(done.indexOf("> two")).toBeLessThan(done.indexOf("> three"));
    expect(seen).toEqual(["one", "two", "three"]);
  });

  test("Esc during the start drops the queued messages: nothing is sent once ready", async () => {
    const { seen, script } = recording();
    await using h = await tuiHarness({}, { script });
    const first = deferred<AgentThread>();
    h.mount({ thread: first.promise });
    await h.send("never mind");
    await h.stdout.waitForText("queued until ready: never mind");
    await h.stdin.press(KEYS.escape);
    const dropped = await h.stdout.waitForText("1 queued message dropped.");
    expect(dropped).not.toContain("queued until ready");
    first.resolve(h.thread);
    await h.send("now this");
    await h.stdout.waitFor((f) => f.includes("Answer to now this.") && f.includes("idle"));
    expect(seen).toEqual(["now this"]);
  });

  test("Ctrl+C twice quits while the model is still loading", async () => {
    await using h = await tuiHarness({}, { script: [{ text: "unused" }] });
    const startup = new StartupStatus();
    const mounted = h.mount({ thread: new Promise<AgentThread>(() => {}), startup });
    startup.set({ phase: "loading", fraction: 0.1 });
    await h.stdout.waitForText("loading model 10%…");
    await h.stdin.press(KEYS.ctrlC);
    await h.stdout.waitForText("Press Ctrl+C again to quit");
    await h.stdin.press(KEYS.ctrlC);
    await expect(mounted.exited).resolves.toEqual({ thread: null });
  });

  test("slash commands that need the session say so while it starts; /help works", async () => {
    await using h = await tuiHarness({}, { script: [{ text: "unused" }] });
    h.mount({ thread: new Promise<AgentThread>(() => {}) });
    await h.send("/undo");
    await h.stdout.waitForText("/undo works once the session has started.");
    await h.send("/help");
    const help = await h.stdout.waitForText("/undo");
    expect(help).not.toContain("queued until ready");
  });

  test("a start that fails is shown, and what was typed is not sent anywhere", async () => {
    await using h = await tuiHarness({}, { script: [{ text: "unused" }] });
    const first = deferred<AgentThread>();
    h.mount({ thread: first.promise });
    await h.send("hello");
    await h.stdout.waitForText("queued until ready: hello");
    first.reject(new Error("the model file is not a GGUF"));
    const failed = await h.stdout.waitForText("Spark could not start: the model file is not a GGUF");
    expect(failed).toContain("failed to start");
    await h.send("again");
    await h.stdout.waitForText("Spark did not start; nothing can be sent.");
    expect(h.thread.history).toEqual([]);
  });
});

describe("a start-up question (project trust) in the terminal UI", () => {
  const question = {
    title: ".spark/config.toml is not trusted",
    details: "  tiers.deep.url: sends your conversation to another server",
    question: "Trust this project?",
    answered: { yes: "Trusted.", no: "Not trusted." },
  };

  test("is shown with its details and answered yes only by y", async () => {
    await using h = await tuiHarness({}, { script: [{ text: "unused" }] });
    const startup = new StartupStatus();
    h.mount({ thread: new Promise<AgentThread>(() => {}), startup });
    const answer = startup.ask(question);
    const shown = await h.stdout.waitForText("Trust this project?");
    expect(shown).toContain("tiers.deep.url: sends your conversation to another server");
    expect(shown).toContain("[N] no (Enter)");
    expect(shown).toContain("waiting for your answer");
    await h.stdin.press("y");
    await expect(answer).resolves.toBe(true);
    await h.stdout.waitForText("Trusted.");
  });

  test("Enter on an empty prompt answers no; text typed meanwhile queues instead of answering", async () => {
    await using h = await tuiHarness({}, { script: [{ text: "unused" }] });
    const startup = new StartupStatus();
    h.mount({ thread: new Promise<AgentThread>(() => {}), startup });
    const answer = startup.ask(question);
    await h.stdout.waitForText("Trust this project?");
    let answered = false;
    void answer.then(() => {
      answered = true;
    });
    await h.send("yes please");
    await h.stdout.waitForText("queued until ready: yes please");
    expect(answered).toBe(false);
    await h.stdin.press(KEYS.enter);
    await expect(answer).resolves.toBe(false);
    const after = await h.stdout.waitForText("Not trusted.");
    expect(after).not.toContain("Trust this project?");
  });
});
