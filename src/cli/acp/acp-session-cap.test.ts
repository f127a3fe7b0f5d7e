import { execFileSync } from "node:child_process";
import { mkdtemp, realpath } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { DEFAULT_MAX_THREADS } from "../../host/agent-host.js";
import type { ScriptFileEntry } from "../test-support/scripted-script.js";
import { MAX_SESSIONS } from "./acp-agent.js";
import { AcpTestClient } from "./test-support/acp-test-client.js";
import { scriptedAcpEnv } from "./test-support/acp-test-env.js";

const script: ScriptFileEntry[] = [{ text: "Still here." }];

let repo: string;
let acp: AcpTestClient;

beforeAll(async () => {
  repo = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-acp-cap-")));
  execFileSync("git", ["init", "-q"], { cwd: repo });
  const env = await scriptedAcpEnv(await mkdtemp(path.join(os.tmpdir(), "spark-acp-cap-state-")), script);
  acp = AcpTestClient.start(repo, env);
  await acp.initialize();
});

afterAll(async () => {
  await acp?.close();
});

test("the caps agree: spark acp follows at most as many sessions as its agent host holds threads", () => {
  expect(MAX_SESSIONS).toBe(DEFAULT_MAX_THREADS);
});

test("after 32 session/new without session/close every new session failed limit_reached: idle ones are released, least recently used first, and come back when used", async () => {
  const sessions: string[] = [];
  const prompt = async (sessionId: string) =>
    (await acp.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "hi" }] }))
      .stopReason;
  // As many sessions as the host holds threads, opened two at a time (the cap is counted before any wait).
  for (let i = 0; i < MAX_SESSIONS; i += 2)
    sessions.push(...(await Promise.all([acp.newSession(repo), acp.newSession(repo)])));
  // The first four are used, then left alone.
  for (const sessionId of sessions.slice(0, 4)) expect(await prompt(sessionId)).toBe("end_turn");
  // Eight more: idle sessions are released to make room, used ones first (their threads are kept).
  for (let i = 0; i < 8; i += 2)
    sessions.push(...(await Promise.all([acp.newSession(repo), acp.newSession(repo)])));
  expect(new Set(sessions).size).toBe(MAX_SESSIONS + 8);

  // A released session follows its thread again when used, making room in turn.
  const first = sessions[0]!;
  expect(await prompt(first)).toBe("end_turn");
  expect(acp.text(first)).toBe("Still here.Still here.");
  const last = sessions.at(-1)!;
  await acp.agent.request("session/set_mode", { sessionId: last, modeId: "plan" });
  expect(await prompt(last)).toBe("end_turn");
  // A session never used whose thread was let go says so, and a new one can be started.
  const empty = sessions[4]!;
  await expect(prompt(empty)).rejects.toMatchObject({ message: expect.stringContaining("never used") });
  expect(await prompt(await acp.newSession(repo))).toBe("end_turn");
}, 120_000);
