import { execFileSync } from "node:child_process";
import { access, mkdir, mkdtemp, readFile, realpath } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { ScriptFileEntry } from "../test-support/scripted-script.js";
import { scriptedAcpEnv } from "./test-support/acp-test-env.js";
import {
  type AcpxRun,
  acpxMissing,
  acpxOwnersGone,
  answerTo,
  chunkText,
  cleanUpAcpx,
  runAcpx,
  updates,
} from "./test-support/acpx.js";

/**
 * `spark acp` driven by acpx (openclaw's headless ACP client, from npm) as a person would run it:
 * `acpx --agent 'node bin/spark.js acp' ...` (test-support/acpx.ts). The tests read the JSON-RPC
 * messages acpx prints and the files the turns changed.
 */

if (acpxMissing) console.log(`skipped: ${acpxMissing}`);

const script: ScriptFileEntry[] = [
  { match: "hello", text: "Hello from Spark." },
  { match: "ponder", reasoning: "The person wants a ponder.", text: "Pondered." },
  {
    match: "greet",
    toolCalls: [{ name: "shell", arguments: JSON.stringify({ command: "echo hi > greeting.txt" }) }],
  },
  {
    match: "salute",
    toolCalls: [{ name: "shell", arguments: JSON.stringify({ command: "echo hi > salute.txt" }) }],
  },
  { text: "Done." },
];

let repo: string;
let home: string;
let sessions: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  repo = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-acpx-")));
  const scratch = await mkdtemp(path.join(os.tmpdir(), "spark-acpx-state-"));
  // acpx keeps its sessions and queue locks under ~/.acpx: a home of the test's own.
  home = path.join(scratch, "home");
  await mkdir(home);
  sessions = path.join(scratch, "sessions");
  execFileSync("git", ["init", "-q"], { cwd: repo });
  env = { ...(await scriptedAcpEnv(scratch, script)), HOME: home };
});

afterAll(async () => {
  await cleanUpAcpx(home);
});

const acpx = (args: string[]): Promise<AcpxRun> => runAcpx(args, { cwd: repo, env });

const exists = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  );

describe.skipIf(acpxMissing !== undefined)("spark acp, driven by acpx (a real ACP client from npm)", () => {
  test("exec: acpx initializes, opens a session, and the answer streams back as message chunks", async () => {
    const run = await acpx(["exec", "hello there"]);
    expect(run.code, run.stderr).toBe(0);
    expect(answerTo(run, "initialize")?.result).toMatchObject({
      protocolVersion: 1,
      agentInfo: { name: "spark" },
      agentCapabilities: { loadSession: true },
    });
    expect(answerTo(run, "session/new")?.result?.sessionId).toMatch(/^thr_/);
    expect(chunkText(run, "agent_message_chunk")).toBe("Hello from Spark.");
    expect(answerTo(run, "session/prompt")?.result).toEqual({ stopReason: "end_turn" });
  });

  test("exec: the model's reasoning reaches acpx as thought chunks, apart from the answer", async () => {
    const run = await acpx(["exec", "ponder this"]);
    expect(run.code, run.stderr).toBe(0);
    expect(chunkText(run, "agent_thought_chunk")).toBe("The person wants a ponder.");
    expect(chunkText(run, "agent_message_chunk")).toBe("Pondered.");
    // Thought first, then the answer.
    const kinds = run.messages.flatMap((m) => (m.params?.update ? [m.params.update.sessionUpdate] : []));
    expect(kinds.lastIndexOf("agent_thought_chunk")).toBeLessThan(kinds.indexOf("agent_message_chunk"));
  });

  test("--approve-all: the command's permission request is allowed, and it runs", async () => {
    const run = await acpx(["--approve-all", "exec", "greet me"]);
    expect(run.code, run.stderr).toBe(0);
    const asked = run.messages.find((m) => m.method === "session/request_permission");
    expect(asked?.params).toMatchObject({
      toolCall: { title: "$ echo hi > greeting.txt", kind: "execute" },
      options: [{ optionId: "allow" }, { optionId: "reject" }],
    });
    expect(answerTo(run, "session/request_permission")?.result).toEqual({
      outcome: { outcome: "selected", optionId: "allow" },
    });
    const finished = updates(run, "tool_call_update").at(-1);
    expect(finished).toMatchObject({
      status: "completed",
      rawOutput: expect.stringContaining("Exit code: 0"),
    });
    expect(await readFile(path.join(repo, "greeting.txt"), "utf8")).toBe("hi\n");
    expect(answerTo(run, "session/prompt")?.result).toEqual({ stopReason: "end_turn" });
  });

  test("--deny-all: the permission request is rejected, nothing runs, and the model reads the denial", async () => {
    const run = await acpx(["--deny-all", "exec", "salute me"]);
    // acpx's exit code when every permission asked was denied.
    expect(run.code, run.stderr).toBe(5);
    expect(answerTo(run, "session/request_permission")?.result).toEqual({
      outcome: { outcome: "selected", optionId: "reject" },
    });
    const finished = updates(run, "tool_call_update").at(-1);
    // rawOutput is the tool output the model got back.
    expect(finished).toMatchObject({ status: "failed", rawOutput: expect.stringMatching(/denied/) });
    expect(await exists(path.join(repo, "salute.txt"))).toBe(false);
    // The turn went on after the denial: the model answered it.
    expect(chunkText(run, "agent_message_chunk")).toBe("Done.");
    expect(answerTo(run, "session/prompt")?.result).toEqual({ stopReason: "end_turn" });
  });

  test("a named session: a later prompt, from a new acpx and a new spark acp, resumes the same Spark thread", async () => {
    const created = await acpx(["sessions", "new", "--name", "work"]);
    expect(created.code, created.stderr).toBe(0);
    const record = created.messages[0] as unknown as { action: string; acpxRecordId: string };
    expect(record.action).toBe("session_ensured");
    const recordFile = path.join(home, ".acpx", "sessions", `${record.acpxRecordId}.json`);
    const sessionOf = async () =>
      (JSON.parse(await readFile(recordFile, "utf8")) as { acp_session_id: string }).acp_session_id;

    const first = await acpx(["prompt", "-s", "work", "hello one"]);
    expect(first.code, first.stderr).toBe(0);
    expect(chunkText(first, "agent_message_chunk")).toBe("Hello from Spark.");
    const threadId = await sessionOf();
    expect(threadId).toMatch(/^thr_/);

    // The queue owner (and the spark acp it started) exits after --ttl: the next prompt starts both anew.
    await acpxOwnersGone(home);
    const second = await acpx(["prompt", "-s", "work", "hello two"]);
    expect(second.code, second.stderr).toBe(0);
    expect(second.messages.some((m) => m.method === "session/new")).toBe(false);
    const resumed = second.messages.find((m) => m.method === "session/resume" || m.method === "session/load");
    expect(resumed?.params?.sessionId).toBe(threadId);
    expect(answerTo(second, resumed!.method!)?.error).toBeUndefined();
    expect(chunkText(second, "agent_message_chunk")).toBe("Hello from Spark.");
    expect(await sessionOf()).toBe(threadId);

    // Both prompts are turns of one thread, in Spark's own transcript.
    const transcript = await readFile(path.join(sessions, `${threadId}.jsonl`), "utf8");
    const asked = transcript
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as { kind: string; item?: { type: string; text?: string } })
      .flatMap((entry) => (entry.item?.type === "user_message" ? [entry.item.text] : []));
    expect(asked).toEqual(["hello one", "hello two"]);
  });
});
