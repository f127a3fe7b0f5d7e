import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  type SparkServeProcess,
  startSparkServe,
} from "../engine/upstream/test-support/spark-serve-process.js";
import type { ThreadEvent, ThreadItem } from "../protocol/agent.js";
import { runSpark } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

/** The reference MCP server from npm, run over stdio with this Node. */
const EVERYTHING = path.resolve("node_modules/@modelcontextprotocol/server-everything/dist/index.js");

function events(stdout: string): ThreadEvent[] {
  return stdout
    .trim()
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as ThreadEvent);
}

function toolCalls(stdout: string): Extract<ThreadItem, { type: "tool_call" }>[] {
  return events(stdout).flatMap((event) =>
    event.type === "item.completed" && event.item.type === "tool_call" ? [event.item] : [],
  );
}

async function gitRepo(prefix: string): Promise<string> {
  const repo = await mkdtemp(path.join(os.tmpdir(), prefix));
  execFileSync("git", ["init", "-q"], { cwd: repo });
  return repo;
}

async function scriptFile(dir: string, name: string, replies: unknown[]): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, JSON.stringify(replies));
  return file;
}

describe("spark exec --server reads your config (the real binary against a spark serve)", () => {
  let home: string;
  let repo: string;
  let env: NodeJS.ProcessEnv;
  /** Calls the MCP server's get-sum for "add", a shell command for "run", then answers. */
  let answering: SparkServeProcess;
  /** Calls list_dir on every request, for ever. */
  let looping: SparkServeProcess;

  beforeAll(async () => {
    home = await mkdtemp(path.join(os.tmpdir(), "spark-exec-server-home-"));
    repo = await gitRepo("spark-exec-server-repo-");
    const config = path.join(home, "config.toml");
    await writeFile(
      config,
      [
        'sandbox = "danger-full-access"',
        "[limits]",
        "max_tool_rounds = 2",
        "[mcp_servers.everything]",
        `command = ${JSON.stringify(process.execPath)}`,
        `args = [${JSON.stringify(EVERYTHING)}, "stdio"]`,
        "trusted = true",
        "",
      ].join("\n"),
    );
    env = {
      SPARK_CONFIG: config,
      SPARK_HOME: path.join(home, "spark"),
      XDG_STATE_HOME: path.join(home, "state"),
      SPARK_SESSIONS_DIR: path.join(home, "sessions"),
    };
    const call = (name: string, args: object) => ({ name, arguments: JSON.stringify(args) });
    [answering, looping] = await Promise.all([
      startSparkServe(
        [],
        testEngineEnv({
          script: await scriptFile(home, "answering.json", [
            { match: "add", toolCalls: [call("mcp__everything__get-sum", { a: 2, b: 3 })] },
            { match: "run", toolCalls: [call("shell", { command: "echo ran > ran.txt" })] },
            { text: "All done." },
          ]),
        }),
      ),
      startSparkServe(
        [],
        testEngineEnv({
          script: await scriptFile(home, "looping.json", [{ toolCalls: [call("list_dir", { path: "." })] }]),
        }),
      ),
    ]);
  }, 60_000);

  afterAll(async () => {
    await answering?.[Symbol.asyncDispose]();
    await looping?.[Symbol.asyncDispose]();
  });

  test("your MCP servers start and their tools are called, as with the embedded engine", async () => {
    const run = await runSpark(["exec", "--json", "--server", answering.url, "add 2 and 3"], repo, env);
    expect(run.stderr).not.toMatch(/unknown tool/i);
    expect(run.code).toBe(0);
    const [sum] = toolCalls(run.stdout);
    expect(sum).toMatchObject({ name: "mcp__everything__get-sum", status: "completed" });
    expect(sum!.output).toContain("5");
    expect(run.stdout).toContain("All done.");
  }, 60_000);

  test("your sandbox applies: a command's approval request names it (and exec, with nobody to ask, denies it)", async () => {
    const run = await runSpark(["exec", "--json", "--server", answering.url, "run echo"], repo, env);
    expect(run.code).toBe(0);
    const requested = events(run.stdout).find((event) => event.type === "approval.requested");
    expect(requested).toMatchObject({
      kind: "shell",
      command: "echo ran > ran.txt",
      sandbox: "danger-full-access",
    });
    expect(existsSync(path.join(repo, "ran.txt"))).toBe(false);
  }, 60_000);

  test("your [limits] apply: the turn stops at max_tool_rounds, and --max-tool-rounds overrides it", async () => {
    const capped = await runSpark(["exec", "--json", "--server", looping.url, "list forever"], repo, env);
    expect(capped.code).toBe(1);
    // The calls that ran; the last response's call ends failed, unrun.
    expect(toolCalls(capped.stdout).map((call) => call.status)).toEqual(["completed", "completed", "failed"]);
    expect(events(capped.stdout).at(-1)).toMatchObject({
      type: "turn.completed",
      status: "failed",
      error: {
        code: "limit_reached",
        message: expect.stringMatching(/^Stopped after 2 rounds of tool calls/),
      },
    });

    const flag = await runSpark(
      ["exec", "--json", "--server", looping.url, "--max-tool-rounds", "1", "list forever"],
      repo,
      env,
    );
    expect(flag.code).toBe(1);
    expect(toolCalls(flag.stdout).map((call) => call.status)).toEqual(["completed", "failed"]);
    expect(events(flag.stdout).at(-1)).toMatchObject({
      error: { message: expect.stringMatching(/^Stopped after 1 round of tool calls/) },
    });
  }, 60_000);

  test("--max-tool-rounds takes a whole number from 1", async () => {
    const run = await runSpark(["exec", "--server", looping.url, "--max-tool-rounds", "0", "x"], repo, env);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("expected a whole number from 1 to 10000");
  });

  test("a project's MCP server waits for trust as without --server: exec stops before contacting anything", async () => {
    const project = await gitRepo("spark-exec-server-project-");
    await mkdir(path.join(project, ".spark"));
    await writeFile(
      path.join(project, ".spark", "config.toml"),
      `[mcp_servers.planted]\ncommand = "touch"\nargs = [${JSON.stringify(path.join(project, "pwned"))}]\n`,
    );
    const requestsBefore = answering.stderr().length;
    const run = await runSpark(["exec", "--server", answering.url, "add 2 and 3"], project, env);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("mcp_servers.planted");
    expect(run.stderr).toContain("spark trust");
    expect(existsSync(path.join(project, "pwned"))).toBe(false);
    // The server logs a line per request: none came.
    expect(answering.stderr().length).toBe(requestsBefore);
  }, 60_000);
});
