import { execFileSync } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, test } from "vitest";
import { testModelPath } from "../engine/test-support/test-model.js";
import { runSpark } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

describe("spark exec (the real binary)", () => {
  let repo: string;
  let sessions: string;
  beforeAll(async () => {
    repo = await mkdtemp(path.join(os.tmpdir(), "spark-exec-"));
    sessions = await mkdtemp(path.join(os.tmpdir(), "spark-sessions-"));
    await writeFile(path.join(repo, "main.ts"), "console.log('hi');\n");
    execFileSync("git", ["init", "-q"], { cwd: repo });
  });

  test("runs one task on the real llama engine with a synthetic model and exits 0", async () => {
    const model = await testModelPath();
    const result = await runSpark(
      ["exec", "--model", model, "--ctx-size", "16384", "--json", "say hello"],
      repo,
      {
        SPARK_SESSIONS_DIR: sessions,
      },
    );
    expect(result.stderr).not.toMatch(/spark: /);
    expect(result.code).toBe(0);
    const events = result.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { type: string; status?: string });
    // The model by its tier, as the terminal, the web app and ACP name it.
    expect(events[0]).toMatchObject({ type: "thread.started", model: "fast" });
    expect(events[1]?.type).toBe("turn.started");
    expect(events.at(-1)).toMatchObject({ type: "turn.completed", status: "completed" });
    expect(events.some((e) => e.type === "item.delta")).toBe(true);
  });

  test("prints the final answer with the scripted engine and saves the transcript", async () => {
    const result = await runSpark(["exec", "explain main.ts"], repo, {
      SPARK_SESSIONS_DIR: sessions,
      ...testEngineEnv(),
    });
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe("You said: explain main.ts");
  });

  test("a failure is a clear message and a non-zero exit code", async () => {
    const result = await runSpark(["exec", "--server", "http://127.0.0.1:9/v1", "hello"], repo, {
      SPARK_SESSIONS_DIR: sessions,
    });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/^spark: /m);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  test("exec without a task explains what it needs", async () => {
    const result = await runSpark(["exec"], repo);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("missing required argument");
  });
});
