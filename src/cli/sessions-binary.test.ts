import { execFileSync } from "node:child_process";
import { mkdtemp, realpath } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, test } from "vitest";
import { runSpark, startWorkspaceServe } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

interface Listed {
  id: string;
  title: string;
  cwd: string;
  turns: number;
  updatedAt: string;
}

async function newRepo(prefix: string): Promise<string> {
  const repo = await realpath(await mkdtemp(path.join(os.tmpdir(), prefix)));
  execFileSync("git", ["init", "-q"], { cwd: repo });
  return repo;
}

function jsonLines(stdout: string): { type: string; thread_id?: string; status?: string }[] {
  return stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { type: string });
}

describe("spark sessions, spark exec resume and thread.started (the real binary, scripted engine)", () => {
  let repo: string;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    repo = await newRepo("spark-sessions-");
    env = {
      SPARK_SESSIONS_DIR: await mkdtemp(path.join(os.tmpdir(), "spark-sessions-dir-")),
      ...testEngineEnv(),
    };
  });

  test("exec --json begins with thread.started; exec resume continues that session; sessions lists it", async () => {
    const first = await runSpark(["exec", "--json", "fix the parser\nsecond line"], repo, env);
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    const events = jsonLines(first.stdout);
    expect(events[0]).toEqual({
      type: "thread.started",
      thread_id: expect.stringMatching(/^thr_/),
      model: expect.any(String),
    });
    expect(events.slice(1).some((event) => event.type === "thread.started")).toBe(false);
    const id = events[0]!.thread_id!;

    // exec's own --json counts too: `spark exec --json resume ID ...`.
    const again = await runSpark(["exec", "--json", "resume", id, "and the tests"], repo, env);
    expect(again.stderr).toBe("");
    expect(again.code).toBe(0);
    const resumed = jsonLines(again.stdout);
    expect(resumed[0]).toEqual({ type: "thread.started", thread_id: id, model: expect.any(String) });
    expect(resumed.at(-1)).toMatchObject({ type: "turn.completed", status: "completed" });

    // A prefix of the id is enough, as for spark resume; plain output is the answer.
    const third = await runSpark(["exec", "resume", id.slice(0, 10), "one more"], repo, env);
    expect(third.code).toBe(0);
    expect(third.stdout.trim()).toBe("You said: one more");

    const listed = await runSpark(["sessions", "--json"], repo, env);
    expect(listed.code).toBe(0);
    const sessions = JSON.parse(listed.stdout) as Listed[];
    expect(sessions).toHaveLength(1);
    expect(sessions[0]).toMatchObject({ id, title: "fix the parser", cwd: repo, turns: 3 });
    expect(Number.isNaN(Date.parse(sessions[0]!.updatedAt))).toBe(false);

    const text = await runSpark(["sessions"], repo, env);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^ID\s+WHEN\s+TURNS\s+TITLE\n/);
    expect(text.stdout).toMatch(new RegExp(`^${id}\\s+just now\\s+3\\s+fix the parser$`, "m"));
  });

  test("exec resume --last continues the newest session of this workspace, not another's", async () => {
    const other = await newRepo("spark-sessions-other-");
    const mine = jsonLines((await runSpark(["exec", "--json", "mine"], repo, env)).stdout)[0]!.thread_id;
    await runSpark(["exec", "theirs"], other, env);
    const last = await runSpark(["exec", "resume", "--last", "--json", "go on"], repo, env);
    expect(last.code).toBe(0);
    expect(jsonLines(last.stdout)[0]).toEqual({
      type: "thread.started",
      thread_id: mine,
      model: expect.any(String),
    });

    const here = JSON.parse((await runSpark(["sessions", "--json"], other, env)).stdout) as Listed[];
    expect(here.map((session) => session.title)).toEqual(["theirs"]);
    const all = JSON.parse((await runSpark(["sessions", "--all", "--json"], other, env)).stdout) as Listed[];
    expect(all.map((session) => session.cwd)).toEqual(expect.arrayContaining([repo, other]));
    expect(all[0]).toMatchObject({ id: mine, turns: 2 });
  });

  test("an unknown session id is a clear error and exit 1, for resume and exec resume", async () => {
    for (const args of [
      ["exec", "resume", "thr_nosuchsession", "hello"],
      ["resume", "thr_nosuchsession"],
    ]) {
      const run = await runSpark(args, repo, env);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/^spark: No session 'thr_nosuchsession' in .*spark sessions lists/m);
      expect(run.stdout).toBe("");
    }
    const noId = await runSpark(["exec", "resume"], repo, env);
    expect(noId.code).toBe(1);
    expect(noId.stderr).toMatch(/needs a session id \(or --last\)/);
  });

  test("a workspace without sessions says so: sessions (text and --json) and resume --last", async () => {
    const empty = await newRepo("spark-sessions-empty-");
    const text = await runSpark(["sessions"], empty, env);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`No saved sessions for ${empty}.`);
    const json = await runSpark(["sessions", "--json"], empty, env);
    expect(JSON.parse(json.stdout)).toEqual([]);
    const last = await runSpark(["resume", "--last"], empty, env);
    expect(last.code).toBe(1);
    expect(last.stderr).toMatch(/No saved sessions for .*nothing to resume/);
  });

  test("exec's resume subcommand does not bring commander's help command: 'spark exec help me' is a task", async () => {
    const run = await runSpark(["exec", "help", "me"], repo, env);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe("You said: help me");
  });

  test("on a running spark serve: exec --json begins with thread.started, and exec resume continues there", async () => {
    const serve = await startWorkspaceServe([], testEngineEnv());
    try {
      const first = await runSpark(["exec", "--json", "on the server"], serve.repo, serve.env);
      expect(first.code).toBe(0);
      const started = jsonLines(first.stdout)[0]!;
      expect(started).toEqual({
        type: "thread.started",
        thread_id: expect.stringMatching(/^thr_/),
        model: expect.any(String),
      });
      const again = await runSpark(
        ["exec", "resume", started.thread_id!, "--json", "again"],
        serve.repo,
        serve.env,
      );
      expect(again.stderr).toBe("");
      expect(jsonLines(again.stdout)[0]).toEqual(started);
      const listed = JSON.parse(
        (await runSpark(["sessions", "--json"], serve.repo, serve.env)).stdout,
      ) as Listed[];
      expect(listed).toEqual([expect.objectContaining({ id: started.thread_id, turns: 2 })]);
    } finally {
      await serve.stop();
    }
  });
});
