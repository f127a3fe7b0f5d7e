import { readFile } from "node:fs/promises";
import path from "node:path";
import { Writable } from "node:stream";
import { describe, expect, test } from "vitest";
import { MATH, PATCH } from "../../agent/test-support/math-fixture.js";
import type { ScriptedReply } from "../../engine/scripted/scripted-engine.js";
import type { ThreadEvent } from "../../protocol/agent.js";
import { runPlain } from "./plain-output.js";
import { tuiHarness } from "./test-support/tui-harness.js";

class Capture extends Writable {
  text = "";
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: () => void): void {
    this.text += String(chunk);
    callback();
  }
}

function inTurn(replies: ScriptedReply[]) {
  let turn = 0;
  return () => replies[Math.min(turn++, replies.length - 1)]!;
}
const call = (name: string, args: object): ScriptedReply => ({
  toolCalls: [{ name, arguments: JSON.stringify(args) }],
});

describe("runPlain (spark exec)", () => {
  test("text: the answer on stdout, tool calls and a plain unified diff on stderr, no ANSI", async () => {
    await using h = await tuiHarness(
      { "src/math.ts": MATH },
      {
        script: inTurn([
          { text: "Reading first.", ...call("read_file", { path: "src/math.ts" }) },
          call("apply_patch", { patch: PATCH }),
          { text: "Fixed add: it now adds." },
        ]),
      },
    );
    const stdout = new Capture();
    const stderr = new Capture();
    const status = await runPlain(h.thread, { input: "fix add", stdout, stderr, json: false });
    expect(status).toBe("completed");
    expect(stdout.text).toBe("Reading first.\nFixed add: it now adds.\n");
    expect(stderr.text).toBe(
      [
        "* read_file src/math.ts",
        "* apply_patch src/math.ts (+1 -1)",
        "--- a/src/math.ts",
        "+++ b/src/math.ts",
        "@@ -1,3 +1,3 @@",
        " export function add(a: number, b: number) {",
        "-  return a - b;",
        "+  return a + b;",
        " }",
        "",
      ].join("\n"),
    );
    expect(stdout.text + stderr.text).not.toContain("\x1b");
    expect(await readFile(path.join(h.dir, "src/math.ts"), "utf8")).toContain("a + b");
  });

  test("text: the model's reasoning stays off stdout (only the answer is there)", async () => {
    await using h = await tuiHarness({}, { script: [{ reasoning: "Think first.", text: "The answer." }] });
    const stdout = new Capture();
    const stderr = new Capture();
    expect(await runPlain(h.thread, { input: "hi", stdout, stderr, json: false })).toBe("completed");
    expect(stdout.text).toBe("The answer.\n");
    expect(stderr.text).toBe("");
  });

  test("json: every thread event as one JSON line on stdout", async () => {
    await using h = await tuiHarness({}, { script: [{ text: "Hello there." }] });
    const stdout = new Capture();
    const stderr = new Capture();
    const status = await runPlain(h.thread, { input: "hi", stdout, stderr, json: true });
    expect(status).toBe("completed");
    const events = stdout.text
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as ThreadEvent);
    expect(events[0]).toMatchObject({ type: "turn.started", input: "hi" });
    expect(events.at(-1)).toMatchObject({ type: "turn.completed", status: "completed" });
    const text = events.flatMap((e) => (e.type === "item.delta" ? [e.delta] : [])).join("");
    expect(text).toBe("Hello there.");
    expect(stderr.text).toBe("");
  });

  test("a command that needs approval is denied with a note; auto-approval runs it", async () => {
    const replies = () => inTurn([call("shell", { command: "echo ran-it" }), { text: "Done." }]);
    {
      await using h = await tuiHarness({}, { script: replies() }, { approvalPolicy: "ask" });
      const stdout = new Capture();
      const stderr = new Capture();
      const status = await runPlain(h.thread, { input: "run echo", stdout, stderr, json: true });
      expect(status).toBe("completed");
      expect(stderr.text).toContain("spark: denied `echo ran-it`: spark exec cannot ask for approval");
      const types = stdout.text
        .trimEnd()
        .split("\n")
        .map((line) => (JSON.parse(line) as ThreadEvent).type);
      expect(types.indexOf("approval.requested")).toBeLessThan(types.indexOf("approval.resolved"));
      expect(stdout.text).toContain('"approved":false');
    }
    {
      await using h = await tuiHarness({}, { script: replies() }, { approvalPolicy: "auto" });
      const stdout = new Capture();
      const stderr = new Capture();
      await runPlain(h.thread, { input: "run echo", stdout, stderr, json: false });
      expect(stderr.text).not.toContain("denied");
      expect(stderr.text).toContain("* $ echo ran-it (exit 0)\n    ran-it\n");
    }
  });

  test("a failed turn resolves failed with the error on stderr; an abort signal interrupts", async () => {
    {
      await using h = await tuiHarness(
        {},
        {
          script: () => {
            throw new Error("engine exploded");
          },
        },
      );
      const stderr = new Capture();
      const status = await runPlain(h.thread, { input: "hi", stdout: new Capture(), stderr, json: false });
      expect(status).toBe("failed");
      expect(stderr.text).toMatch(/^spark: error: .+/m);
    }
    {
      await using h = await tuiHarness({}, { script: [{ text: "word ".repeat(500) }], tokensPerSecond: 50 });
      const controller = new AbortController();
      const stdout = new Capture();
      const stderr = new Capture();
      h.thread.on((event) => {
        if (event.type === "item.delta") controller.abort();
      });
      const status = await runPlain(h.thread, {
        input: "go",
        stdout,
        stderr,
        json: false,
        signal: controller.signal,
      });
      expect(status).toBe("interrupted");
      expect(stderr.text).toContain("spark: interrupted");
      expect(stdout.text.endsWith("\n")).toBe(true);
    }
  });
});
