import { execFileSync } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, test } from "vitest";
import type { ThreadEvent } from "../protocol/agent.js";
import { runSpark } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

function events(stdout: string): ThreadEvent[] {
  return stdout
    .trim()
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as ThreadEvent);
}

/** 3,000 words: long enough to meet any cap, slow enough (at 200 tokens/s) to outlast a timeout. */
const LONG = Array.from({ length: 3000 }, (_, i) => `word${i}`).join(" ");

describe("spark exec ends every turn with a final event (the real binary, scripted engine)", () => {
  let repo: string;
  let env: NodeJS.ProcessEnv;
  let script: string;

  beforeAll(async () => {
    const home = await mkdtemp(path.join(os.tmpdir(), "spark-exec-limits-"));
    repo = await mkdtemp(path.join(os.tmpdir(), "spark-exec-limits-repo-"));
    execFileSync("git", ["init", "-q"], { cwd: repo });
    script = path.join(home, "long.json");
    await writeFile(script, JSON.stringify([{ text: LONG }]));
    const config = path.join(home, "config.toml");
    await writeFile(config, "[limits]\nmax_output_tokens = 30\n");
    env = {
      SPARK_CONFIG: config,
      SPARK_HOME: path.join(home, "spark"),
      XDG_STATE_HOME: path.join(home, "state"),
      SPARK_SESSIONS_DIR: path.join(home, "sessions"),
    };
  });

  test("max_output_tokens under [limits] caps each response, --max-output-tokens overrides it; exit 1 with the reason", async () => {
    const capped = await runSpark(["exec", "--json", "--no-attach", "talk"], repo, {
      ...env,
      ...testEngineEnv({ script }),
    });
    expect(capped.code).toBe(1);
    expect(events(capped.stdout).at(-1)).toMatchObject({
      type: "turn.completed",
      status: "failed",
      reason: "max_output_tokens",
      error: { code: "limit_reached", message: expect.stringMatching(/output limit of 30 tokens/) },
    });

    const flag = await runSpark(["exec", "--no-attach", "--max-output-tokens", "40", "talk"], repo, {
      ...env,
      ...testEngineEnv({ script }),
    });
    expect(flag.code).toBe(1);
    expect(flag.stderr).toMatch(/^spark: Stopped: the reply reached its output limit of 40 tokens/m);
    expect(flag.stdout.trim().split(" ")).toHaveLength(40);
  });

  test("--timeout interrupts the turn: the final event says timeout, stderr says so, exit 124", async () => {
    const run = await runSpark(
      ["exec", "--json", "--no-attach", "--max-output-tokens", "100000", "--timeout", "2s", "talk"],
      repo,
      { ...env, ...testEngineEnv({ script, tokensPerSecond: 200 }) },
    );
    expect(run.code).toBe(124);
    const last = events(run.stdout).at(-1);
    expect(last).toMatchObject({ type: "turn.completed", status: "interrupted", reason: "timeout" });
    expect(run.stderr).toContain("spark: stopped: the task ran past --timeout 2s");
  });

  test("--timeout refuses what is not a duration", async () => {
    for (const bad of ["soon", "-5s", "0s", "5x", "9999h"]) {
      const run = await runSpark(["exec", "--timeout", bad, "talk"], repo, env);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain("expected a duration such as 90s, 5m or 1h");
    }
  });

  test("a mistyped command is refused with a suggestion and never sent as a prompt", async () => {
    const exce = await runSpark(["exce", "hi"], repo, { ...env, ...testEngineEnv() });
    expect(exce.code).toBe(1);
    expect(exce.stderr).toMatch(/unknown command 'exce'\. Did you mean exec\?/);
    expect(exce.stdout).not.toContain("You said");
    const srve = await runSpark(["srve"], repo, env);
    expect(srve.stderr).toMatch(/Did you mean serve\?/);
    // A prompt is still a prompt.
    const prompt = await runSpark(["why does x fail"], repo, { ...env, ...testEngineEnv() });
    expect(prompt.code).toBe(0);
    expect(prompt.stdout.trim()).toBe("You said: why does x fail");
  });
});
