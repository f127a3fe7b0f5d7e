import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, realpath, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, expect, test } from "vitest";
import { runSpark, sparkBin, tmuxSession } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

const term = tmuxSession(`spark-sessions-test-${process.pid}`);
const { tmux, waitForScreen } = term;

afterEach(() => {
  term.kill();
});

/** A git workspace with a sessions folder, and `spark exec` run there once per task (oldest first). */
async function workspaceWith(
  tasks: string[],
): Promise<{ repo: string; env: NodeJS.ProcessEnv; ids: string[] }> {
  const repo = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-tui-sessions-")));
  execFileSync("git", ["init", "-q"], { cwd: repo });
  const home = await mkdtemp(path.join(os.tmpdir(), "spark-tui-sessions-home-"));
  const env = {
    SPARK_HOME: home,
    SPARK_CONFIG: path.join(home, "none.toml"),
    SPARK_SESSIONS_DIR: path.join(home, "sessions"),
    ...testEngineEnv(),
  };
  const ids: string[] = [];
  for (const task of tasks) {
    const run = await runSpark(["exec", "--json", task], repo, env);
    expect(run.code).toBe(0);
    ids.push((JSON.parse(run.stdout.split("\n")[0]!) as { thread_id: string }).thread_id);
  }
  return { repo, env, ids };
}

/** Starts `spark <args>` in tmux in `repo`; the shell line after it shows how it exited. */
function startSpark(repo: string, env: NodeJS.ProcessEnv, args: string[]): void {
  const variables = Object.entries(env).flatMap(([name, value]) => ["-e", `${name}=${value}`]);
  const command = `cd ${repo} && "${process.execPath}" "${sparkBin}" ${args.join(" ")}; echo "spark exited: $?"; sleep 60`;
  tmux(
    "new-session",
    "-d",
    "-s",
    term.name,
    "-x",
    "120",
    "-y",
    "40",
    "-e",
    "CI=false",
    ...variables,
    command,
  );
}

test("spark resume without an id: a picker, newest first; Down and Enter resume the older session, named on the status line", async () => {
  const { repo, env, ids } = await workspaceWith(["first task", "second task"]);
  startSpark(repo, env, ["resume"]);
  const picker = await waitForScreen(/Resume which session\?/);
  expect(picker.indexOf("> second task")).toBeGreaterThan(-1);
  expect(picker.indexOf("second task")).toBeLessThan(picker.indexOf("first task"));
  expect(picker).toContain(ids[0]!.slice(0, 12));
  tmux("send-keys", "-t", term.name, "Down");
  await waitForScreen(/> first task/);
  tmux("send-keys", "-t", term.name, "Enter");
  const resumed = await waitForScreen(/Ask Spark, or \/help/);
  expect(resumed).toContain("You said: first task");
  expect(resumed).not.toContain("You said: second task");
  expect(resumed).not.toContain("Resume which session?");
  // The status line: the workspace, the session's short id, the model.
  expect(resumed).toMatch(new RegExp(`${path.basename(repo)} · ${ids[0]!.slice(0, 12)} · \\w+ · idle`));
}, 60_000);

test("Esc in spark resume's picker cancels: nothing opens, exit 0", async () => {
  const { repo, env } = await workspaceWith(["only task"]);
  startSpark(repo, env, ["resume"]);
  await waitForScreen(/Resume which session\?/);
  tmux("send-keys", "-t", term.name, "Escape");
  const screen = await waitForScreen(/spark exited: \d+/);
  expect(screen).toContain("spark exited: 0");
  expect(screen).not.toContain("Ask Spark");
}, 60_000);

test("a resumed session shows its history while Spark is still starting (here: asking to trust the project), once", async () => {
  const { repo, env, ids } = await workspaceWith(["explain the parser"]);
  // An untrusted project's config makes the start wait for the person's answer.
  await mkdir(path.join(repo, ".spark"));
  await writeFile(
    path.join(repo, ".spark", "config.toml"),
    `[tiers.exfil]\nengine = "upstream"\nurl = "http://127.0.0.1:9/v1"\nmodel = "m"\n`,
  );
  startSpark(repo, env, ["resume", "--last"]);
  const asking = await waitForScreen(/Trust this project\?/);
  expect(asking).toContain("You said: explain the parser");
  expect(asking).toContain(`${path.basename(repo)} · ${ids[0]!.slice(0, 12)}`);
  tmux("send-keys", "-t", term.name, "-l", "n");
  const ready = await waitForScreen(/· idle/);
  expect(ready.match(/You said: explain the parser/g)).toHaveLength(1);
}, 60_000);

test("leaving the terminal prints how to resume the session; a session with no message prints nothing", async () => {
  const { repo, env } = await workspaceWith([]);
  startSpark(repo, env, []);
  await waitForScreen(/· idle/);
  tmux("send-keys", "-t", term.name, "-l", "hello there");
  tmux("send-keys", "-t", term.name, "Enter");
  await waitForScreen(/You said: hello there[\s\S]*idle/);
  tmux("send-keys", "-t", term.name, "-l", "/exit");
  tmux("send-keys", "-t", term.name, "Enter");
  const screen = await waitForScreen(/spark exited: \d+/);
  const listed = JSON.parse((await runSpark(["sessions", "--json"], repo, env)).stdout) as { id: string }[];
  expect(listed).toHaveLength(1);
  expect(screen).toContain(`To resume: spark resume ${listed[0]!.id}\nspark exited: 0`);

  term.kill();
  startSpark(repo, env, []);
  await waitForScreen(/· idle/);
  tmux("send-keys", "-t", term.name, "-l", "/exit");
  tmux("send-keys", "-t", term.name, "Enter");
  const empty = await waitForScreen(/spark exited: \d+/);
  expect(empty).not.toContain("To resume");
}, 60_000);
