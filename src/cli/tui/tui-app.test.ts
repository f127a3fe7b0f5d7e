import "./test-support/force-color.js";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { CommandSandbox } from "../../agent/sandbox/command-sandbox.js";
import { MATH, PATCH } from "../../agent/test-support/math-fixture.js";
import type { GenerateRequest } from "../../engine/engine.js";
import type { ScriptedReply } from "../../engine/scripted/scripted-engine.js";
import { KEYS } from "./test-support/fake-terminal.js";
import { tuiHarness } from "./test-support/tui-harness.js";

const LONG = Array.from({ length: 200 }, (_, i) => `word${i}`).join(" ");

const call = (name: string, args: object): ScriptedReply => ({
  toolCalls: [{ name, arguments: JSON.stringify(args) }],
});

function lastUser(request: GenerateRequest): string {
  return [...request.messages].reverse().find((m) => m.role === "user")?.content ?? "";
}

/** A script answering each request in turn (the last reply repeats). */
function inTurn(replies: ScriptedReply[]) {
  let turn = 0;
  return () => replies[Math.min(turn++, replies.length - 1)]!;
}

describe("the terminal UI over a real agent thread (scripted model, real server and client)", () => {
  test("streams agent text into the view as it arrives and reports the turn's speed", async () => {
    await using h = await tuiHarness(
      {},
      { script: [{ text: `First line.\n${LONG}` }], tokensPerSecond: 200 },
    );
    h.mount();
    await h.stdout.waitForText("Ask Spark");
    await h.send("hi");
    // Mid-stream: the finished line is printed, the partial one is live, the status says so.
    const live = await h.stdout.waitFor((f) => f.includes("word5 ") && f.includes("streaming"));
    expect(live).toContain("> hi");
    expect(live).toContain("First line.");
    expect(live).not.toContain("word199");
    expect(live).toContain("Esc interrupt · Enter steer · Tab queue · /help");
    const done = await h.stdout.waitFor((f) => f.includes("word199") && f.includes("idle"));
    expect(done).toMatch(/ttft \d+ ms · [\d.]+ tok\/s/);
    expect(h.thread.busy).toBe(false);
  });

  test("a patch shows as a coloured unified diff with its file header", async () => {
    await using h = await tuiHarness(
      { "src/math.ts": MATH },
      { script: inTurn([call("apply_patch", { patch: PATCH }), { text: "Fixed add." }]) },
    );
    h.mount();
    await h.send("fix add");
    const frame = await h.stdout.waitFor((f) => f.includes("Fixed add.") && f.includes("idle"), {
      raw: true,
    });
    expect(frame).toContain("\x1b[31m-  return a - b;");
    expect(frame).toContain("\x1b[32m+  return a + b;");
    const screen = h.stdout.screen();
    expect(screen).toContain("• apply_patch src/math.ts\n");
    expect(screen).toContain("src/math.ts +1 -1");
    expect(screen).toContain("@@ -1,3 +1,3 @@");
    expect(screen).toContain("  export function add(a: number, b: number) {");
  });

  test("a patch grows in the view as the model writes it; Esc stops it and nothing is applied", async () => {
    const lines = Array.from({ length: 40 }, (_, i) => `+export const n${i} = ${i};`);
    const patch = ["*** Begin Patch", "*** Add File: src/numbers.ts", ...lines, "*** End Patch"].join("\n");
    await using h = await tuiHarness(
      {},
      { script: inTurn([call("apply_patch", { patch }), { text: "Added." }]), tokensPerSecond: 40 },
    );
    h.mount();
    await h.send("add numbers");
    // Part of the patch, coloured, while the call is still being written.
    const frame = await h.stdout.waitFor((f) => f.includes("+export const n3 = 3;"), { raw: true });
    expect(frame).toContain("\x1b[32m+export const n3 = 3;");
    const screen = h.stdout.screen();
    expect(screen).toContain("• apply_patch src/numbers.ts  writing...");
    expect(screen).toContain("writing patch");
    expect(screen).not.toContain("n39 = 39");
    await h.stdin.press(KEYS.escape);
    const stopped = await h.stdout.waitFor((f) => f.includes("Interrupted.") && f.includes("idle"));
    expect(stopped).toContain("• apply_patch src/numbers.ts");
    expect(stopped).toContain("Not applied");
    expect(stopped).not.toContain("n39 = 39");
    await expect(readFile(path.join(h.dir, "src/numbers.ts"), "utf8")).rejects.toThrow(/ENOENT/);
  });

  test("Esc interrupts a slow stream at once and the status says interrupted", async () => {
    await using h = await tuiHarness({}, { script: [{ text: LONG }], tokensPerSecond: 50 });
    h.mount();
    await h.send("write a lot");
    await h.stdout.waitFor((f) => f.includes("word2 ") && f.includes("streaming"));
    await h.stdin.press(KEYS.escape);
    const frame = await h.stdout.waitFor((f) => f.includes("Interrupted.") && f.includes("idle"));
    expect(frame).toContain("last turn interrupted");
    expect(frame).not.toContain("word199");
    expect(h.thread.busy).toBe(false);
    // The UI stays usable: the next message starts a new turn.
    await h.send("again");
    await h.stdout.waitForText("> again");
  });

  test("Enter while the model streams steers the running turn", async () => {
    const script = (request: GenerateRequest) =>
      lastUser(request) === "say hi instead" ? { text: "Hi, steered." } : { text: LONG };
    await using h = await tuiHarness({}, { script, tokensPerSecond: 50 });
    h.mount();
    await h.send("write a lot");
    await h.stdout.waitFor((f) => f.includes("word2 ") && f.includes("streaming"));
    await h.send("say hi instead");
    const frame = await h.stdout.waitFor((f) => f.includes("Hi, steered.") && f.includes("idle"));
    expect(frame).toContain("> steer: say hi instead");
    expect(frame).not.toContain("word199");
    expect(frame).not.toContain("last turn interrupted");
  });

  test("Enter while a patch is being written steers away from it; the patch is not applied", async () => {
    const lines = Array.from({ length: 40 }, (_, i) => `+export const n${i} = ${i};`);
    const patch = ["*** Begin Patch", "*** Add File: src/numbers.ts", ...lines, "*** End Patch"].join("\n");
    const script = (request: GenerateRequest) =>
      lastUser(request) === "no, leave it" ? { text: "Left it alone." } : call("apply_patch", { patch });
    await using h = await tuiHarness({}, { script, tokensPerSecond: 40 });
    h.mount();
    await h.send("add numbers");
    await h.stdout.waitFor((f) => f.includes("+export const n3 = 3;") && f.includes("writing patch"));
    await h.send("no, leave it");
    const frame = await h.stdout.waitFor((f) => f.includes("Left it alone.") && f.includes("idle"));
    expect(frame).toContain("> steer: no, leave it");
    expect(frame).toContain("Not applied");
    expect(frame).not.toContain("n39 = 39");
    await expect(readFile(path.join(h.dir, "src/numbers.ts"), "utf8")).rejects.toThrow(/ENOENT/);
  });

  test("Tab queues a message: shown as queued until its turn starts, then run", async () => {
    const script = (request: GenerateRequest) =>
      lastUser(request) === "second task"
        ? { text: "Second answer." }
        : { text: "First answer is slow to type out." };
    await using h = await tuiHarness({}, { script, tokensPerSecond: 40 });
    h.mount();
    await h.send("first task");
    await h.stdout.waitForText("streaming");
    await h.send("second task", KEYS.tab);
    const queued = await h.stdout.waitForText("queued: second task");
    expect(queued).not.toContain("> second task");
    const done = await h.stdout.waitFor((f) => f.includes("Second answer.") && f.includes("idle"));
    expect(done).not.toContain("queued:");
    expect(done.indexOf("First answer is slow to type out.")).toBeLessThan(done.indexOf("> second task"));
  });

  test("typing sends the finished words to the thread as a draft of its next turn; the turn is unchanged", async () => {
    await using h = await tuiHarness({}, { script: [{ text: "First." }, { text: "Second." }] });
    h.mount();
    await h.send("hi");
    await h.stdout.waitFor((f) => f.includes("First.") && f.includes("idle"));
    await h.stdin.press("Fix the pa");
    const draft = await h.engine.drafted(0);
    expect(draft.text).toBe("Fix the pa");
    expect(draft.messages.at(-1)).toEqual({ role: "assistant", content: "First." });
    await h.send("rser", "\r");
    await h.stdout.waitFor((f) => f.includes("Second.") && f.includes("idle"));
    expect(h.engine.drafts).toHaveLength(1);
  });

  test("/undo after a patch restores the file", async () => {
    await using h = await tuiHarness(
      { "src/math.ts": MATH },
      { script: inTurn([call("apply_patch", { patch: PATCH }), { text: "Fixed add." }]) },
    );
    h.mount();
    await h.send("fix add");
    await h.stdout.waitFor((f) => f.includes("Fixed add.") && f.includes("idle"));
    const file = path.join(h.dir, "src/math.ts");
    expect(await readFile(file, "utf8")).toContain("a + b");
    await h.send("/undo");
    await h.stdout.waitForText("restored src/math.ts");
    expect(await readFile(file, "utf8")).toBe(MATH);
    await h.send("/undo");
    await h.stdout.waitForText("Nothing to undo.");
  });

  test("asks before running a command and answers with y", async () => {
    await using h = await tuiHarness(
      {},
      { script: inTurn([call("shell", { command: "echo approved-output" }), { text: "Ran it." }]) },
      { approvalPolicy: "ask" },
    );
    h.mount();
    await h.send("run echo");
    const ask = await h.stdout.waitForText("[y] approve  [n] deny");
    expect(ask).toContain("$ echo approved-output");
    expect(ask).toContain("sandboxed: workspace, no network");
    expect(ask).toContain("waiting for approval");
    await h.stdin.press("y");
    const frame = await h.stdout.waitFor((f) => f.includes("Ran it.") && f.includes("idle"));
    expect(frame).toContain("exit 0");
    expect(frame).toContain("approved-output");
    expect(frame).not.toContain("[y] approve");
  });

  test("a denied command is reported and the turn goes on", async () => {
    await using h = await tuiHarness(
      {},
      { script: inTurn([call("shell", { command: "rm -rf build" }), { text: "Understood." }]) },
      {
        approvalPolicy: "ask",
        sandbox: new CommandSandbox({ mode: "danger-full-access" }),
      },
    );
    h.mount();
    await h.send("run the cleanup");
    const ask = await h.stdout.waitForText("[y] approve  [n] deny");
    expect(ask).toContain("NOT sandboxed: full filesystem and network access");
    await h.stdin.press("n");
    const frame = await h.stdout.waitFor((f) => f.includes("Understood.") && f.includes("idle"));
    expect(frame).toContain("Denied: $ rm -rf build");
  });

  test("a failed turn shows its error in red and the UI stays usable", async () => {
    let fail = true;
    const script = () => {
      if (fail) {
        fail = false;
        throw new Error("engine exploded");
      }
      return { text: "Recovered." };
    };
    await using h = await tuiHarness({}, { script });
    h.mount();
    await h.send("hi");
    const frame = await h.stdout.waitFor((f) => f.includes("\x1b[31mError: "), { raw: true });
    expect(h.stdout.screen()).toMatch(/Error: .*engine exploded/);
    expect(frame).toContain("\x1b[31mError:");
    await h.send("again");
    await h.stdout.waitFor((f) => f.includes("Recovered.") && f.includes("idle"));
  });
});

describe("commands and keys", () => {
  test("/help lists commands and keys; an unknown command says so", async () => {
    await using h = await tuiHarness({}, {});
    h.mount();
    await h.send("/help");
    const help = await h.stdout.waitForText("Commands:");
    for (const command of ["/undo", "/new", "/model [name]", "/exit", "Esc", "Tab"])
      expect(help).toContain(command);
    await h.send("/frobnicate");
    await h.stdout.waitForText("Unknown command /frobnicate");
  });

  test("/model shows the model, switches through onModelChange, and refuses unknown names", async () => {
    await using h = await tuiHarness({}, {});
    const switched: string[] = [];
    h.mount({
      models: () => ["scripted", "other"],
      onModelChange: async (model) => {
        switched.push(model);
        return h.makeThread();
      },
    });
    await h.send("/model");
    await h.stdout.waitForText("Model: scripted. Available: scripted, other.");
    await h.send("/model nope");
    await h.stdout.waitForText("Unknown model 'nope'");
    await h.send("/model other");
    const frame = await h.stdout.waitForText("Switched to other.");
    expect(switched).toEqual(["other"]);
    expect(frame).toContain(" other · idle");
    // Messages now go to the new thread.
    await h.send("hello");
    await h.stdout.waitForText("You said: hello");
    expect(h.threads[1]!.history.length).toBeGreaterThan(0);
    expect(h.thread.history).toHaveLength(0);
  });

  test("/model on a host whose models are not known here (attached) asks the host and shows its answer", async () => {
    await using h = await tuiHarness({}, {});
    const asked: string[] = [];
    h.mount({
      onModelChange: async (model) => {
        asked.push(model);
        if (model !== "deep") throw new Error(`Unknown model '${model}'. Available: scripted, deep.`);
        return h.makeThread();
      },
    });
    await h.send("/model");
    await h.stdout.waitForText("Model: scripted. Switch with /model <name>.");
    await h.send("/model nope");
    await h.stdout.waitForText("Error: Unknown model 'nope'. Available: scripted, deep.");
    await h.send("/model deep");
    await h.stdout.waitForText("Switched to deep.");
    expect(asked).toEqual(["nope", "deep"]);
  });

  test("/model with one model says it is the only one, not 'Available: fast.', and refuses another name", async () => {
    await using h = await tuiHarness({}, {});
    const asked: string[] = [];
    h.mount({
      models: () => ["scripted"],
      onModelChange: async (model) => {
        asked.push(model);
        return h.makeThread();
      },
    });
    await h.send("/model");
    const frame = await h.stdout.waitForText("Model: scripted, the only model here");
    expect(frame).not.toContain("Available");
    await h.send("/model deep");
    await h.stdout.waitForText("Unknown model 'deep': scripted is the only model here");
    expect(asked).toEqual([]);
  });

  test("/model uses the host's list as it is now (attached: the models event arrives after the view opens)", async () => {
    await using h = await tuiHarness({}, {});
    let listed: readonly string[] = [];
    h.mount({ models: () => listed, onModelChange: async () => h.makeThread() });
    listed = ["scripted", "deep"];
    await h.send("/model");
    await h.stdout.waitForText("Model: scripted. Available: scripted, deep. Switch with /model <name>.");
    await h.send("/model deep");
    await h.stdout.waitForText("Switched to deep.");
  });

  test("/new starts a new thread and clears the screen", async () => {
    await using h = await tuiHarness({}, {});
    h.mount();
    await h.send("first");
    await h.stdout.waitForText("You said: first");
    await h.send("/new");
    await h.stdout.waitForText("New session.");
    expect(h.threads).toHaveLength(2);
    expect(h.stdout.writes.some((w) => w.startsWith("\x1b[2J\x1b[3J\x1b[H"))).toBe(true);
    await h.send("second");
    await h.stdout.waitForText("You said: second");
    expect(h.threads[1]!.history.map((item) => item.type === "user_message" && item.text)).toContain(
      "second",
    );
    expect(h.thread.history.map((item) => item.type === "user_message" && item.text)).not.toContain("second");
  });

  test("text and Enter read as one chunk (fast typing, a slow link) still submit", async () => {
    await using h = await tuiHarness({}, {});
    h.mount();
    await h.stdout.waitForText("Ask Spark");
    await h.stdin.press("quick\r");
    await h.stdout.waitForText("You said: quick");
  });

  test("Up and Down walk through what was typed", async () => {
    await using h = await tuiHarness({}, {});
    h.mount();
    await h.send("one");
    await h.stdout.waitForText("You said: one");
    await h.send("two");
    await h.stdout.waitForText("You said: two");
    await h.stdin.press("dra");
    await h.stdin.press(KEYS.up);
    await h.stdout.waitFor((f) => /> two\s/.test(promptLine(f)));
    await h.stdin.press(KEYS.up);
    await h.stdout.waitFor((f) => /> one\s/.test(promptLine(f)));
    await h.stdin.press(KEYS.down);
    await h.stdin.press(KEYS.down);
    await h.stdout.waitFor((f) => /> dra\s/.test(promptLine(f)));
  });

  test("Ctrl+C clears the prompt, and twice on an empty prompt quits", async () => {
    await using h = await tuiHarness({}, {});
    const tui = h.mount();
    await h.stdin.press("some text");
    await h.stdout.waitFor((f) => promptLine(f).includes("some text"));
    await h.stdin.press(KEYS.ctrlC);
    await h.stdout.waitFor((f) => promptLine(f).includes("Ask Spark"));
    await h.stdin.press(KEYS.ctrlC);
    await h.stdout.waitForText("Press Ctrl+C again to quit");
    await h.stdin.press(KEYS.ctrlC);
    await tui.exited;
  });

  test("a first prompt passed in is sent once the view is up", async () => {
    await using h = await tuiHarness({}, {});
    h.mount({ prompt: "from the command line" });
    const frame = await h.stdout.waitFor(
      (f) => f.includes("You said: from the command line") && f.includes("idle"),
    );
    expect(frame).toContain("> from the command line");
  });

  test("a turn started before the view opens is shown from where the view joins it", async () => {
    await using h = await tuiHarness(
      {},
      { script: [{ text: "Already typing this answer." }], tokensPerSecond: 40 },
    );
    h.thread.submit("early question");
    h.mount();
    const frame = await h.stdout.waitFor(
      (f) => f.includes("Already typing this answer.") && f.includes("idle"),
    );
    expect(frame).toContain("> early question");
  });

  test("Ctrl+D on an empty prompt quits", async () => {
    await using h = await tuiHarness({}, {});
    const first = h.mount();
    await h.stdout.waitForText("Ask Spark");
    await h.stdin.press(KEYS.ctrlD);
    await first.exited;
  });

  test("/exit quits and interrupts a running turn", async () => {
    await using h = await tuiHarness({}, { script: [{ text: LONG }], tokensPerSecond: 50 });
    const tui = h.mount();
    await h.send("write a lot");
    await h.stdout.waitForText("streaming");
    await h.send("/exit");
    await tui.exited;
    await h.thread.whenIdle();
    expect(h.thread.busy).toBe(false);
  });
});

/** The prompt's line of a frame (the one inside the box that starts with `> `). */
function promptLine(frame: string): string {
  return frame.split("\n").findLast((line) => line.startsWith("│ >")) ?? "";
}
