import { execFileSync } from "node:child_process";
import { existsSync, watch } from "node:fs";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, test } from "vitest";
import type { ThreadEvent, ThreadItem } from "../../protocol/agent.js";
import { agentHarness } from "../test-support/agent-harness.js";
import { MATH, PATCH } from "../test-support/math-fixture.js";
import { call, recorded } from "../test-support/scripted-replies.js";
import { MAX_HOOK_OUTPUT_BYTES } from "./hook-process.js";
import { parseHooksFile } from "./hooks-file.js";
import type { HookSet } from "./thread-hooks.js";

// Hooks run for real, under the real /usr/bin/bwrap (the thread's default sandbox).

/** A hook set as a hooks.json with these events would give. */
async function hooks(events: Record<string, unknown[]>): Promise<HookSet> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-hooks-"));
  return { ...parseHooksFile(JSON.stringify({ hooks: events }), path.join(dir, "hooks.json")), notices: [] };
}

const command = (text: string, timeout?: number) => ({
  hooks: [{ type: "command", command: text, ...(timeout ? { timeout } : {}) }],
});

function notices(events: ThreadEvent[]): string[] {
  return events.flatMap((e) =>
    e.type === "item.completed" && e.item.type === "notice" ? [e.item.text] : [],
  );
}

function toolItems(events: ThreadEvent[]): Extract<ThreadItem, { type: "tool_call" }>[] {
  return events.flatMap((e) => (e.type === "item.completed" && e.item.type === "tool_call" ? [e.item] : []));
}

describe("hooks around a turn (scripted model, real server, hooks in the sandbox)", () => {
  test("a PreToolUse hook denies a call: it is not run, and the model gets the reason as its result", async () => {
    const model = recorded([
      call("apply_patch", { patch: PATCH }),
      call("read_file", { path: "src/math.ts" }),
    ]);
    const set = await hooks({
      PreToolUse: [
        { matcher: "apply_patch|shell", ...command("cat > .pre.json; echo 'math.ts is frozen' >&2; exit 2") },
      ],
    });
    await using h = await agentHarness({ "src/math.ts": MATH }, { script: model.script }, { hooks: set });
    await h.thread.startTurn("fix add");
    expect(await readFile(path.join(h.dir, "src/math.ts"), "utf8")).toBe(MATH);
    const [patch, read] = toolItems(h.events);
    expect(patch).toMatchObject({ name: "apply_patch", status: "failed" });
    expect(patch!.output).toContain("math.ts is frozen");
    expect(patch!.display).toBeUndefined();
    // The model read the reason as the call's result; the unmatched read_file ran.
    expect(model.requests[1]!.messages.find((m) => m.role === "tool")?.content).toContain(
      "math.ts is frozen",
    );
    expect(read).toMatchObject({ name: "read_file", status: "completed" });
    expect(notices(h.events)).toContain("Hook PreToolUse denied apply_patch: math.ts is frozen");
    // The hook got the event on stdin, as hooks.json hooks expect it.
    const input = JSON.parse(await readFile(path.join(h.dir, ".pre.json"), "utf8"));
    expect(input).toMatchObject({
      session_id: h.thread.info.id,
      cwd: h.dir,
      hook_event_name: "PreToolUse",
      tool_name: "apply_patch",
      tool_input: { patch: PATCH },
      tool_use_id: patch!.id,
    });
  });

  test("a JSON permissionDecision deny works as exit code 2 does", async () => {
    const model = recorded([call("list_dir", { path: "." })]);
    const deny = {
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "deny",
        permissionDecisionReason: "no listing",
      },
    };
    const set = await hooks({
      PreToolUse: [{ matcher: "list_.*", ...command(`echo '${JSON.stringify(deny)}'`) }],
    });
    await using h = await agentHarness({ "a.txt": "a" }, { script: model.script }, { hooks: set });
    await h.thread.startTurn("what is here?");
    expect(toolItems(h.events)[0]).toMatchObject({
      status: "failed",
      output: expect.stringContaining("no listing"),
    });
    expect(model.requests[1]!.messages.find((m) => m.role === "tool")?.content).not.toContain("a.txt");
  });

  test("UserPromptSubmit adds context to the message; SessionStart runs once, at the first turn", async () => {
    const model = recorded([{ text: "ok" }, { text: "ok" }]);
    const context = {
      hookSpecificOutput: { hookEventName: "UserPromptSubmit", additionalContext: "Branch: main" },
    };
    const set = await hooks({
      SessionStart: [{ matcher: "startup", ...command("echo 'Project uses pnpm.'") }],
      UserPromptSubmit: [command("echo 'Today is Tuesday.'"), command(`echo '${JSON.stringify(context)}'`)],
    });
    await using h = await agentHarness({}, { script: model.script }, { hooks: set });
    await h.thread.startTurn("hello");
    await h.thread.startTurn("again");
    const users = model.requests.map(
      (r) => r.messages.filter((m) => m.role === "user").at(-1)!.content as string,
    );
    expect(users[0]).toMatch(
      /^hello\n\n<hook-context event="SessionStart">\nProject uses pnpm\.\n<\/hook-context>/,
    );
    expect(users[0]).toContain("Today is Tuesday.");
    expect(users[0]).toContain("Branch: main");
    expect(users[1]).toMatch(/^again\n\n<hook-context event="UserPromptSubmit">/);
    expect(users[1]).not.toContain("pnpm");
    // The person's message is recorded as typed.
    const typed = h.events.flatMap((e) =>
      e.type === "item.completed" && e.item.type === "user_message" ? [e.item.text] : [],
    );
    expect(typed).toEqual(["hello", "again"]);
  });

  test("SessionStart's source is resume on a resumed session, and its matcher picks", async () => {
    const model = recorded([{ text: "ok" }]);
    const set = await hooks({
      SessionStart: [
        { matcher: "startup", ...command("echo 'fresh start'") },
        { matcher: "resume", ...command("cat > .session.json; echo 'welcome back'") },
      ],
    });
    const thread = {
      id: "thr_saved",
      title: "saved",
      cwd: "/",
      model: "",
      createdAt: new Date(0).toISOString(),
      updatedAt: new Date(0).toISOString(),
    };
    const resume = { thread, items: [{ type: "user_message" as const, id: "item_1", text: "earlier" }] };
    await using h = await agentHarness({}, { script: model.script }, { hooks: set, resume });
    await h.thread.startTurn("go on");
    const sent = model.requests[0]!.messages.at(-1)!.content as string;
    expect(sent).toContain("welcome back");
    expect(sent).not.toContain("fresh start");
    const input = JSON.parse(await readFile(path.join(h.dir, ".session.json"), "utf8"));
    expect(input).toMatchObject({
      hook_event_name: "SessionStart",
      source: "resume",
      session_id: "thr_saved",
    });
  });

  test("UserPromptSubmit exit 2 blocks the message: the model never sees it and the turn fails with a notice", async () => {
    const model = recorded([{ text: "ok" }]);
    const set = await hooks({
      UserPromptSubmit: [command("grep -q password && { echo 'looks like a secret' >&2; exit 2; }; exit 0")],
    });
    await using h = await agentHarness({}, { script: model.script }, { hooks: set });
    await h.thread.startTurn("my password is hunter2");
    expect(model.requests).toHaveLength(0);
    expect(h.events.find((e) => e.type === "turn.completed")).toMatchObject({ status: "failed" });
    expect(notices(h.events)).toContain(
      "Hook UserPromptSubmit blocked the message; it was not sent: looks like a secret",
    );
    expect(h.thread.history.some((item) => item.type === "user_message")).toBe(false);
    await h.thread.startTurn("hello");
    expect(model.requests[0]!.messages.map((m) => m.content).join("\n")).not.toContain("hunter2");
  });

  test("PostToolUse runs after a call with its result, and what it blocks with reaches the model", async () => {
    const model = recorded([call("read_file", { path: "a.txt" }), { text: "done" }]);
    const set = await hooks({
      PostToolUse: [
        {
          matcher: "read_file",
          ...command('cat > .post.json; echo \'{"decision":"block","reason":"a.txt is generated"}\''),
        },
      ],
    });
    await using h = await agentHarness({ "a.txt": "alpha" }, { script: model.script }, { hooks: set });
    await h.thread.startTurn("read a.txt");
    const input = JSON.parse(await readFile(path.join(h.dir, ".post.json"), "utf8"));
    expect(input).toMatchObject({
      hook_event_name: "PostToolUse",
      tool_name: "read_file",
      tool_input: { path: "a.txt" },
    });
    expect(input.tool_response.output).toContain("alpha");
    expect(input.tool_response.is_error).toBe(false);
    const result = model.requests[1]!.messages.find((m) => m.role === "tool")?.content as string;
    expect(result).toContain("alpha");
    expect(result).toContain('<hook-context event="PostToolUse">\na.txt is generated');
  });

  test("a Stop hook runs when the model is done, and a block makes the turn go on with its reason", async () => {
    const model = recorded([{ text: "Fixed." }, { text: "Tests pass." }]);
    const set = await hooks({
      Stop: [
        command(
          'input=$(cat); echo "$input" >> .stop.jsonl; case "$input" in *\'"stop_hook_active":false\'*) ' +
            'echo \'{"decision":"block","reason":"Run the tests first."}\';; esac',
        ),
      ],
    });
    await using h = await agentHarness({}, { script: model.script }, { hooks: set });
    await h.thread.startTurn("fix it");
    expect(model.requests).toHaveLength(2);
    expect(model.requests[1]!.messages.at(-1)).toMatchObject({
      role: "user",
      content: "Run the tests first.",
    });
    const runs = (await readFile(path.join(h.dir, ".stop.jsonl"), "utf8"))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(runs).toMatchObject([
      { hook_event_name: "Stop", stop_hook_active: false, last_assistant_message: "Fixed." },
      { hook_event_name: "Stop", stop_hook_active: true, last_assistant_message: "Tests pass." },
    ]);
    expect(notices(h.events)).toContain("Hook Stop: the turn goes on: Run the tests first.");
    expect(h.events.find((e) => e.type === "turn.completed")).toMatchObject({ status: "completed" });
  });

  test("a Stop hook that always blocks continues the turn a bounded number of times", async () => {
    const model = recorded([]);
    const set = await hooks({ Stop: [command("echo 'again' >&2; exit 2")] });
    await using h = await agentHarness({}, { script: model.script }, { hooks: set });
    await h.thread.startTurn("go");
    expect(model.requests).toHaveLength(6);
    expect(notices(h.events).at(-1)).toMatch(/went on 5 times already; it ends/);
  });

  test("PreCompact runs before older turns are compacted", async () => {
    // Long answers: compacting them makes the conversation smaller.
    const answer = { text: "word ".repeat(200).trim() };
    const model = recorded([answer, answer, answer]);
    const set = await hooks({ PreCompact: [{ matcher: "auto", ...command("cat > .compact.json") }] });
    // A budget this small compacts before every request once a turn is old enough to compact.
    await using h = await agentHarness({}, { script: model.script }, { hooks: set, contextBudget: 1 });
    await h.thread.startTurn("first");
    await h.thread.startTurn("second");
    expect(existsSync(path.join(h.dir, ".compact.json"))).toBe(false);
    await h.thread.startTurn("third");
    const input = JSON.parse(await readFile(path.join(h.dir, ".compact.json"), "utf8"));
    expect(input).toMatchObject({ hook_event_name: "PreCompact", trigger: "auto", custom_instructions: "" });
    expect(notices(h.events)).toEqual([expect.stringMatching(/^Context compacted: \d+ -> \d+ tokens/)]);
  });

  test("PreCompact hears a compaction by hand as manual, with its focus", async () => {
    const model = recorded([{ text: "one" }, { text: "two" }]);
    const set = await hooks({ PreCompact: [{ matcher: "manual", ...command("cat > .compact.json") }] });
    await using h = await agentHarness({}, { script: model.script }, { hooks: set });
    await h.thread.startTurn("first");
    await h.thread.startTurn("second");
    await h.thread.compact("the parser");
    const input = JSON.parse(await readFile(path.join(h.dir, ".compact.json"), "utf8"));
    expect(input).toMatchObject({ trigger: "manual", custom_instructions: "the parser" });
  });

  test("regression (a turn started while /compact's PreCompact hooks ran had its chain swapped): the compaction stands down", async () => {
    // The third answer streams for about two seconds: the turn still runs when the hook ends.
    const model = recorded([{ text: "one" }, { text: "two" }, { text: "word ".repeat(40).trim() }]);
    // The hook says it started, then waits for the test's go.
    const set = await hooks({ PreCompact: [command("echo up > .started; cat .go > /dev/null")] });
    await using h = await agentHarness({}, { script: model.script, tokensPerSecond: 20 }, { hooks: set });
    execFileSync("mkfifo", [".started", ".go"], { cwd: h.dir });
    await h.thread.startTurn("first");
    await h.thread.startTurn("second");
    const compacting = h.thread.compact().catch((caught: unknown) => caught);
    await readFile(path.join(h.dir, ".started"));
    const turn = h.thread.startTurn("third");
    await writeFile(path.join(h.dir, ".go"), "go\n");
    expect(await compacting).toMatchObject({ code: "response_in_progress" });
    await turn;
    expect(notices(h.events)).toEqual([]);
    // The turn continued its own chain.
    expect(JSON.parse(h.sent.at(-1)!).previous_response_id).toMatch(/^resp_/);
  });

  test("a hook past its time budget is killed, a notice says so, and the turn goes on", async () => {
    const model = recorded([call("read_file", { path: "a.txt" }), { text: "read it" }]);
    const set = await hooks({
      PreToolUse: [command("sleep 30", 1)],
      UserPromptSubmit: [command("sleep 30", 1)],
    });
    await using h = await agentHarness({ "a.txt": "alpha" }, { script: model.script }, { hooks: set });
    await h.thread.startTurn("read a.txt");
    expect(notices(h.events)).toEqual([
      "Hook UserPromptSubmit `sleep 30`: ran past its 1 s budget and was killed; the turn goes on",
      "Hook PreToolUse `sleep 30`: ran past its 1 s budget and was killed; the turn goes on",
    ]);
    expect(toolItems(h.events)[0]).toMatchObject({ name: "read_file", status: "completed" });
    expect(h.events.find((e) => e.type === "turn.completed")).toMatchObject({ status: "completed" });
  });

  test("an interrupt kills the running hooks: the turn ends interrupted and nothing they said applies", async () => {
    const model = recorded([{ text: "ok" }]);
    const set = await hooks({ UserPromptSubmit: [command("echo started > .started; sleep 30; echo late")] });
    await using h = await agentHarness({}, { script: model.script }, { hooks: set });
    // Interrupt once the hook is running (it says so by creating a file).
    const started = new Promise<void>((resolve) => {
      const watcher = watch(h.dir, (_, name) => {
        if (name !== ".started") return;
        watcher.close();
        resolve();
      });
    });
    const done = h.thread.startTurn("hello");
    await started;
    h.thread.interrupt();
    await done;
    expect(h.events.find((e) => e.type === "turn.completed")).toMatchObject({ status: "interrupted" });
    expect(notices(h.events)).toEqual([]);
    expect(model.requests).toHaveLength(0);
  });

  test("output is bounded: too much stdout is not used, a long reason is cut", async () => {
    const model = recorded([call("list_dir", { path: "." }), { text: "ok" }]);
    const set = await hooks({
      UserPromptSubmit: [command("head -c 100000 /dev/zero | tr '\\0' x")],
      PreToolUse: [command("head -c 100000 /dev/zero | tr '\\0' y >&2; exit 2")],
    });
    await using h = await agentHarness({}, { script: model.script }, { hooks: set });
    await h.thread.startTurn("list");
    expect(model.requests[0]!.messages.at(-1)!.content).toBe("list");
    expect(notices(h.events)[0]).toBe(
      `Hook UserPromptSubmit \`head -c 100000 /dev/zero | tr '\\0' x\`: printed more than ${MAX_HOOK_OUTPUT_BYTES} bytes; its output was not used`,
    );
    const denied = toolItems(h.events)[0]!.output!;
    expect(denied).toContain(`[… ${100_000 - MAX_HOOK_OUTPUT_BYTES} more bytes]`);
    expect(Buffer.byteLength(denied)).toBeLessThan(MAX_HOOK_OUTPUT_BYTES + 200);
  });

  test("failures and output are shown, never swallowed, and never fail the turn", async () => {
    const model = recorded([call("read_file", { path: "a.txt" }), { text: "ok" }]);
    const set = await hooks({
      PostToolUse: [
        command("echo formatted"),
        command("echo broken >&2; exit 1"),
        command("echo '{\"decision\": 3}'"),
        command("echo \"$SECRET_X\"no secret; touch .git/hooked 2>/dev/null || echo '.git is read-only'"),
      ],
    });
    await using h = await agentHarness({ "a.txt": "alpha" }, { script: model.script }, { hooks: set });
    process.env.SECRET_X = "hunter2";
    try {
      await h.thread.startTurn("read a.txt");
    } finally {
      delete process.env.SECRET_X;
    }
    expect(notices(h.events)).toEqual([
      "Hook PostToolUse `echo formatted`: formatted",
      "Hook PostToolUse `echo broken >&2; exit 1`: failed with exit code 1; ignored: broken",
      expect.stringMatching(
        /^Hook PostToolUse `echo '\{"decision": 3\}'`: printed JSON that is not a hook answer \(decision: /,
      ),
      expect.stringMatching(/: no secret\n\.git is read-only$/),
    ]);
    expect(model.requests[1]!.messages.find((m) => m.role === "tool")?.content).not.toContain("formatted");
    expect(h.events.find((e) => e.type === "turn.completed")).toMatchObject({ status: "completed" });
  });

  test("the load notices (a malformed or untrusted file) are said at the thread's first turn", async () => {
    const model = recorded([{ text: "ok" }, { text: "ok" }]);
    const set: HookSet = {
      hooks: [],
      notices: ["/x/hooks.json is not a valid hooks file: it is not valid JSON."],
    };
    await using h = await agentHarness({}, { script: model.script }, { hooks: set });
    await h.thread.startTurn("one");
    await h.thread.startTurn("two");
    expect(notices(h.events)).toEqual(["/x/hooks.json is not a valid hooks file: it is not valid JSON."]);
  });
});
