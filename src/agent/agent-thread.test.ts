import { existsSync } from "node:fs";
import { readFile, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, test } from "vitest";
import type { GenerateRequest } from "../engine/engine.js";
import type { ScriptedReply } from "../engine/scripted/scripted-engine.js";
import { HOST_REQUEST_SCHEMAS } from "../protocol/agent-requests.js";
import { CommandSandbox } from "./sandbox/command-sandbox.js";
import { agentHarness } from "./test-support/agent-harness.js";
import { MATH, PATCH } from "./test-support/math-fixture.js";
import { call, recorded } from "./test-support/scripted-replies.js";

describe("the agent on a temporary git repository (scripted model, real server and client)", () => {
  test("reads a file and applies a patch: the file changes exactly as the patch says", async () => {
    const model = recorded([
      call("read_file", { path: "src/math.ts" }),
      call("apply_patch", { patch: PATCH }),
      { text: "Fixed add." },
    ]);
    await using h = await agentHarness({ "src/math.ts": MATH }, { script: model.script });
    await h.thread.startTurn("add() subtracts; fix it");
    expect(await readFile(path.join(h.dir, "src/math.ts"), "utf8")).toBe(MATH.replace("a - b", "a + b"));
    // The model saw the file's contents as the read_file result.
    const toolMessage = model.requests[1]!.messages.find((m) => m.role === "tool");
    expect(toolMessage?.content).toContain("return a - b;");
    const done = h.events.find((e) => e.type === "turn.completed");
    expect(done).toMatchObject({ status: "completed" });
    // Stats read as a person reads them (exec --json printed 6529.6187979999995 ms).
    const stats = done?.type === "turn.completed" ? done.stats : undefined;
    expect(Number.isInteger(stats?.timeToFirstTokenMs)).toBe(true);
    expect(Number.isInteger((stats?.tokensPerSecond ?? 0) * 10)).toBe(true);
    const patchItem = h.events.find(
      (e) => e.type === "item.completed" && e.item.type === "tool_call" && e.item.name === "apply_patch",
    );
    expect(patchItem).toMatchObject({ item: { status: "completed", display: { kind: "diff" } } });
  });

  test("a forced first call: the turn's first response must call the named tool, later ones choose", async () => {
    const model = recorded([call("list_dir", { path: "." }), { text: "One file." }, { text: "Bye." }]);
    await using h = await agentHarness({ "a.txt": "a" }, { script: model.script });
    await h.thread.startTurn("what is here?", { toolChoice: { name: "list_dir" } });
    await h.thread.startTurn("thanks");
    expect(model.requests.map((request) => request.toolChoice)).toEqual([
      { name: "list_dir" },
      undefined,
      undefined,
    ]);
    const listed = h.events.find((e) => e.type === "item.completed" && e.item.type === "tool_call");
    expect(listed).toMatchObject({ item: { name: "list_dir", status: "completed" } });
  });

  test("turn.start's tool_choice is checked at the edge", () => {
    const schema = HOST_REQUEST_SCHEMAS["turn.start"];
    const base = { type: "turn.start", thread_id: "t1", input: "hi" };
    expect(schema.safeParse({ ...base, tool_choice: "required" }).success).toBe(true);
    expect(schema.safeParse({ ...base, tool_choice: { name: "list_dir" } }).success).toBe(true);
    expect(schema.safeParse({ ...base, tool_choice: "none" }).success).toBe(false);
    expect(schema.safeParse({ ...base, tool_choice: { name: "" } }).success).toBe(false);
    expect(schema.safeParse({ ...base, tool_choice: { name: "x", extra: 1 } }).success).toBe(false);
  });

  test("a patch with stale context is rejected, nothing changes, and the model is told why", async () => {
    const stale = PATCH.replace("-  return a - b;", "-  return a * b;");
    const model = recorded([call("apply_patch", { patch: stale }), { text: "I will re-read it." }]);
    await using h = await agentHarness({ "src/math.ts": MATH }, { script: model.script });
    await h.thread.startTurn("fix add");
    expect(await readFile(path.join(h.dir, "src/math.ts"), "utf8")).toBe(MATH);
    const result = model.requests[1]!.messages.find((m) => m.role === "tool");
    expect(result?.content).toMatch(/src\/math\.ts/);
    expect(result?.content).toMatch(/return a \* b;/);
  });

  test("paths that escape the workspace are refused", async () => {
    const model = recorded([
      call("read_file", { path: "../../etc/passwd" }),
      call("read_file", { path: "link/secret" }),
      { text: "ok" },
    ]);
    await using h = await agentHarness({ "a.txt": "a" }, { script: model.script });
    await symlink("/etc", path.join(h.dir, "link"));
    await h.thread.startTurn("read things");
    const outputs = model.requests
      .slice(1)
      .map((r) => r.messages.filter((m) => m.role === "tool").at(-1)?.content ?? "");
    expect(outputs[0]).toMatch(/outside the workspace/i);
    expect(outputs[1]).toMatch(/outside the workspace/i);
    expect(outputs.join("")).not.toContain("root:");
  });

  test("instructions and tools go out byte-identical on every turn, whatever the person says of commands", async () => {
    const model = recorded([{ text: "Sure." }, { text: "Running." }, { text: "Fine." }, { text: "Thanks." }]);
    await using h = await agentHarness({ "a.txt": "a" }, { script: model.script }, { temperature: 0 });
    await h.thread.prewarm();
    await h.thread.startTurn("don't run anything, just explain a.txt");
    await h.thread.startTurn("run the tests please");
    await h.thread.startTurn("why does this run slowly?");
    await h.thread.startTurn("now explain it again");
    const prefixes = h.sent.map((body) => {
      const { model, instructions, tools, temperature, store, tool_choice } = JSON.parse(body);
      return JSON.stringify({ model, instructions, tools, temperature, store, tool_choice });
    });
    expect(prefixes).toHaveLength(5);
    expect(new Set(prefixes).size).toBe(1);
    expect(JSON.parse(prefixes[0]!).tools.map((t: { name: string }) => t.name)).toContain("shell");
    // What the engine renders grows only at its end: each request starts with the whole previous one.
    const generated = model.requests;
    expect(generated).toHaveLength(4);
    for (const [i, request] of generated.entries()) {
      expect(request.tools).toEqual(generated[0]!.tools);
      if (i > 0) {
        const previous = generated[i - 1]!.messages;
        expect(request.messages.slice(0, previous.length)).toEqual(previous);
      }
    }
  });

  test('"don\'t run anything" enables no command: a shell call the model makes anyway waits for the person, and a denial runs nothing', async () => {
    const model = recorded([call("shell", { command: "echo ran > ran.txt" }), { text: "ok" }]);
    await using h = await agentHarness(
      { "a.txt": "a" },
      { script: model.script },
      { sandbox: new CommandSandbox({ mode: "danger-full-access" }) },
    );
    const approval = h.next("approval.requested");
    const turn = h.thread.startTurn("don't run anything, just explain a.txt");
    const request = await approval;
    expect(request).toMatchObject({
      kind: "shell",
      command: "echo ran > ran.txt",
      cwd: h.thread.info.cwd,
      sandbox: "danger-full-access",
    });
    h.thread.respondToApproval(request.approval_id, false);
    await turn;
    expect(existsSync(path.join(h.dir, "ran.txt"))).toBe(false);
    const item = h.events.find((e) => e.type === "item.completed" && e.item.type === "tool_call");
    expect(item).toMatchObject({ item: { name: "shell", status: "failed" } });
    expect(model.requests[1]!.messages.at(-1)?.content).toMatch(/denied this command: it did not run/);
    expect(h.events.find((e) => e.type === "turn.completed")).toMatchObject({ status: "completed" });
  });

  test("the model may ask for a command on any turn: it waits for the person's yes, then runs", async () => {
    const model = recorded([call("shell", { command: "echo ran > ran.txt" }), { text: "ok" }]);
    await using h = await agentHarness(
      { "a.txt": "a" },
      { script: model.script },
      { sandbox: new CommandSandbox({ mode: "danger-full-access" }) },
    );
    const approval = h.next("approval.requested");
    // Nothing here asks for a command: asking is the model's to do, deciding the person's.
    const turn = h.thread.startTurn("why does this run slowly?");
    const request = await approval;
    expect(request).toMatchObject({ kind: "shell", command: "echo ran > ran.txt", cwd: h.thread.info.cwd });
    // The turn waits: the model has had no answer and the command has not run.
    expect(model.requests).toHaveLength(1);
    expect(existsSync(path.join(h.dir, "ran.txt"))).toBe(false);
    h.thread.respondToApproval(request.approval_id, true);
    await turn;
    expect(await readFile(path.join(h.dir, "ran.txt"), "utf8")).toBe("ran\n");
    expect(model.requests[1]!.messages.at(-1)?.content).toMatch(/^Exit code: 0/);
  });

  test("under --approval auto a command runs without asking, in the sandbox the policy names", async () => {
    const model = recorded([call("shell", { command: "echo ran > ran.txt" }), { text: "ok" }]);
    await using h = await agentHarness(
      { "a.txt": "a" },
      { script: model.script },
      { approvalPolicy: "auto", sandbox: new CommandSandbox({ mode: "danger-full-access" }) },
    );
    await h.thread.startTurn("fix the build");
    expect(h.events.some((e) => e.type === "approval.requested")).toBe(false);
    expect(await readFile(path.join(h.dir, "ran.txt"), "utf8")).toBe("ran\n");
  });

  test("a shell call waits for approval, then runs in the sandbox", async () => {
    const model = recorded([
      call("shell", { command: "echo ran > ran.txt; touch .git/planted" }),
      { text: "ok" },
    ]);
    await using h = await agentHarness({ "a.txt": "a" }, { script: model.script });
    const approval = h.next("approval.requested");
    const turn = h.thread.startTurn("explain a.txt");
    const request = await approval;
    expect(request).toMatchObject({ kind: "shell", sandbox: "workspace-write" });
    expect(existsSync(path.join(h.dir, "ran.txt"))).toBe(false);
    h.thread.respondToApproval(request.approval_id, true);
    await turn;
    expect(await readFile(path.join(h.dir, "ran.txt"), "utf8")).toBe("ran\n");
    // The sandbox keeps .git read-only.
    expect(existsSync(path.join(h.dir, ".git", "planted"))).toBe(false);
  });

  test("a shell call is run only after approval; a denied one never runs", async () => {
    const model = recorded([call("shell", { command: "echo ran > ran.txt" }), { text: "ok" }]);
    await using h = await agentHarness({ "a.txt": "a" }, { script: model.script });
    const approval = h.next("approval.requested");
    const turn = h.thread.startTurn("run echo for me");
    const request = await approval;
    expect(request).toMatchObject({ kind: "shell", command: "echo ran > ran.txt" });
    h.thread.respondToApproval(request.approval_id, false);
    await turn;
    await expect(readFile(path.join(h.dir, "ran.txt"), "utf8")).rejects.toThrow();
    expect(model.requests[1]!.messages.filter((m) => m.role === "tool").at(-1)?.content).toMatch(/denied/i);
  });

  test("interrupting a turn denies and forgets its pending approval: a late answer finds nothing", async () => {
    const model = recorded([call("shell", { command: "echo ran > ran.txt" }), { text: "ok" }]);
    await using h = await agentHarness({ "a.txt": "a" }, { script: model.script });
    const approval = h.next("approval.requested");
    const turn = h.thread.startTurn("run echo for me");
    const request = await approval;
    h.thread.interrupt();
    await turn;
    const resolved = h.events.filter((e) => e.type === "approval.resolved");
    expect(resolved).toEqual([
      {
        type: "approval.resolved",
        approval_id: request.approval_id,
        approved: false,
        turn_id: request.turn_id,
        call_id: request.call_id,
      },
    ]);
    // The approval names the call that asked.
    const asking = h.events.find((e) => e.type === "item.started" && e.item.type === "tool_call");
    expect(request.call_id).toBe(asking?.type === "item.started" ? asking.item.id : undefined);
    expect(h.events.indexOf(resolved[0]!)).toBeLessThan(
      h.events.findIndex((e) => e.type === "turn.completed"),
    );
    expect(h.events.find((e) => e.type === "turn.completed")).toMatchObject({ status: "interrupted" });
    expect(h.thread.respondToApproval(request.approval_id, true)).toBe(false);
    expect(h.events.filter((e) => e.type === "approval.resolved")).toHaveLength(1);
    await expect(readFile(path.join(h.dir, "ran.txt"), "utf8")).rejects.toThrow();
  });

  test("undo refuses when the person edited the patched file since, and leaves it as it is", async () => {
    const model = recorded([call("apply_patch", { patch: PATCH }), { text: "done" }]);
    await using h = await agentHarness({ "src/math.ts": MATH }, { script: model.script });
    await h.thread.startTurn("fix");
    const edited = `${MATH.replace("a - b", "a + b")}// mine\n`;
    await writeFile(path.join(h.dir, "src/math.ts"), edited);
    const error = await h.thread.undoPatch().catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: "invalid_request", status: 409 });
    expect((error as Error).message).toContain("src/math.ts");
    expect(await readFile(path.join(h.dir, "src/math.ts"), "utf8")).toBe(edited);
  });

  test("undo restores the file byte for byte", async () => {
    const original =
      "line one\r\nexport function add(a: number, b: number) {\r\n  return a - b;\r\n}\r\n\u00e9\u2603 no newline";
    const crlfPatch = [
      "*** Begin Patch",
      "*** Update File: src/math.ts",
      "@@",
      "-  return a - b;",
      "+  return a + b;",
      "*** End Patch",
    ].join("\n");
    const model = recorded([call("apply_patch", { patch: crlfPatch }), { text: "done" }]);
    await using h = await agentHarness({ "src/math.ts": original }, { script: model.script });
    await h.thread.startTurn("fix");
    expect(await readFile(path.join(h.dir, "src/math.ts"), "utf8")).not.toBe(original);
    expect(await h.thread.undo()).toEqual(["src/math.ts"]);
    expect(await readFile(path.join(h.dir, "src/math.ts"))).toEqual(Buffer.from(original));
    expect(await h.thread.undo()).toEqual([]);
  });

  test("a steer sent mid-stream changes what the next output is built on", async () => {
    const long = Array.from({ length: 400 }, (_, i) => `word${i}`).join(" ");
    const seen: GenerateRequest[] = [];
    const script = (request: GenerateRequest): ScriptedReply => {
      seen.push(request);
      const last = request.messages.at(-1);
      return {
        text: last?.role === "user" && last.content === "use tabs instead" ? "Switching to tabs." : long,
      };
    };
    await using h = await agentHarness({ "a.txt": "a" }, { script, tokensPerSecond: 400 });
    const firstDelta = h.next("item.delta");
    const turn = h.thread.startTurn("indent the file");
    await firstDelta;
    h.thread.submit("use tabs instead");
    await turn;
    const continuation = seen.at(-1)!;
    // The continuation is built on the partial answer plus the steering message.
    expect(continuation.messages.at(-1)).toEqual({ role: "user", content: "use tabs instead" });
    const partial = continuation.messages.at(-2);
    expect(partial?.role).toBe("assistant");
    expect(partial?.content.startsWith("word0")).toBe(true);
    expect(partial?.content.length).toBeLessThan(long.length);
    const texts = h.events.flatMap((e) =>
      e.type === "item.completed" && e.item.type === "agent_message" ? [e.item.text] : [],
    );
    expect(texts.at(-1)).toBe("Switching to tabs.");
    expect(h.events.find((e) => e.type === "turn.completed")).toMatchObject({ status: "completed" });
  });

  test("a steer whose send fails is not lost: it goes with the turn's next request", async () => {
    const long = Array.from({ length: 400 }, (_, i) => `word${i}`).join(" ");
    const seen: GenerateRequest[] = [];
    const script = (request: GenerateRequest): ScriptedReply => {
      seen.push(request);
      const last = request.messages.at(-1);
      return { text: last?.role === "user" && last.content === "be brief" ? "Brief." : long };
    };
    await using h = await agentHarness({ "a.txt": "a" }, { script, tokensPerSecond: 400 });
    h.client.steer = () => Promise.reject(new Error("socket gone"));
    const firstDelta = h.next("item.delta");
    const turn = h.thread.startTurn("explain a.txt");
    await firstDelta;
    h.thread.submit("be brief");
    await turn;
    expect(seen).toHaveLength(2);
    expect(seen[1]!.messages.at(-1)).toEqual({ role: "user", content: "be brief" });
    expect(h.events.find((e) => e.type === "turn.completed")).toMatchObject({ status: "completed" });
  });

  test("interrupt stops the turn and leaves no half-applied edit", async () => {
    const slow = Array.from({ length: 400 }, (_, i) => `w${i}`).join(" ");
    const model = recorded([
      { text: slow, toolCalls: [{ name: "apply_patch", arguments: JSON.stringify({ patch: PATCH }) }] },
    ]);
    await using h = await agentHarness(
      { "src/math.ts": MATH },
      { script: model.script, tokensPerSecond: 200 },
    );
    const firstDelta = h.next("item.delta");
    const turn = h.thread.startTurn("fix add");
    await firstDelta;
    h.thread.interrupt();
    await turn;
    expect(h.events.find((e) => e.type === "turn.completed")).toMatchObject({ status: "interrupted" });
    expect(await readFile(path.join(h.dir, "src/math.ts"), "utf8")).toBe(MATH);
    // The conversation stays valid: the next turn works.
    await h.thread.startTurn("never mind");
    expect(h.events.filter((e) => e.type === "turn.completed").at(-1)).toMatchObject({ status: "completed" });
    await writeFile(path.join(h.dir, "unused"), "");
  });
});
