import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { runSpark } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

describe("a repository's .spark/hooks.json runs only after spark trust (the real binary, scripted model)", () => {
  test("untrusted: skipped with a notice; trusted: its hook runs and its context reaches the model", async () => {
    const repo = await mkdtemp(path.join(os.tmpdir(), "spark-hooks-repo-"));
    const home = await mkdtemp(path.join(os.tmpdir(), "spark-hooks-home-"));
    execFileSync("git", ["init", "-q"], { cwd: repo });
    await mkdir(path.join(repo, ".spark"));
    const hooks = {
      hooks: {
        UserPromptSubmit: [
          { hooks: [{ type: "command", command: "touch hook-ran; echo 'Context from the project hook.'" }] },
        ],
      },
    };
    await writeFile(path.join(repo, ".spark", "hooks.json"), JSON.stringify(hooks));
    // The echo engine answers with the message it got, so stdout shows what the model read.
    const env = { SPARK_HOME: home, SPARK_CONFIG: path.join(home, "config.toml"), ...testEngineEnv() };

    const untrusted = await runSpark(["exec", "--no-prewarm", "hello"], repo, env);
    expect(untrusted.code).toBe(0);
    expect(untrusted.stderr).toContain(
      `Skipped the 1 hook of ${path.join(repo, ".spark", "hooks.json")}: the project is not trusted`,
    );
    expect(existsSync(path.join(repo, "hook-ran"))).toBe(false);
    expect(untrusted.stdout).not.toContain("Context from the project hook.");

    const trust = await runSpark(["trust"], repo, env);
    expect(trust.code).toBe(0);
    expect(trust.stdout).toMatch(
      /^Trusted .* with \.spark\/hooks\.json as it is now \(sha256:[0-9a-f]{12}\): its hooks run from the next session\.\n/,
    );

    const trusted = await runSpark(["exec", "--no-prewarm", "hello"], repo, env);
    expect(trusted.code).toBe(0);
    expect(trusted.stderr).not.toContain("Skipped");
    expect(existsSync(path.join(repo, "hook-ran"))).toBe(true);
    expect(trusted.stdout).toContain("You said: hello");
    expect(trusted.stdout).toContain("Context from the project hook.");
    await rm(repo, { recursive: true, force: true });
  });
});
