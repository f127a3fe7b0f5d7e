import { execFileSync } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, test } from "vitest";
import { EXIT_USAGE } from "./output-schema-file.js";
import { runSpark } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

/** An answer the grammar keeps short: an enum, a bounded integer, a bounded string, a boolean. */
const SCHEMA = {
  type: "object",
  properties: {
    verdict: { type: "string", enum: ["pass", "fail"] },
    score: { type: "integer", minimum: 0, maximum: 10 },
    summary: { type: "string", maxLength: 12 },
    done: { type: "boolean" },
  },
  required: ["verdict", "score", "summary", "done"],
  additionalProperties: false,
};

describe("spark exec --output-schema (the real binary)", () => {
  let repo: string;
  let sessions: string;
  beforeAll(async () => {
    repo = await mkdtemp(path.join(os.tmpdir(), "spark-exec-schema-"));
    sessions = await mkdtemp(path.join(os.tmpdir(), "spark-sessions-"));
    execFileSync("git", ["init", "-q"], { cwd: repo });
    await writeFile(path.join(repo, "schema.json"), JSON.stringify(SCHEMA));
    await writeFile(path.join(repo, "list.json"), "[1, 2]");
    await writeFile(path.join(repo, "broken.json"), "{ not json");
    let deep: Record<string, unknown> = { type: "string" };
    for (let i = 0; i < 30; i++) deep = { items: deep };
    await writeFile(path.join(repo, "deep.json"), JSON.stringify(deep));
  });

  test("a usable schema goes with the turn to the agent host, which accepts it", async () => {
    const result = await runSpark(["exec", "--output-schema", "schema.json", "hello"], repo, {
      SPARK_SESSIONS_DIR: sessions,
      ...testEngineEnv(),
    });
    expect(result.stderr).not.toMatch(/spark: /);
    expect(result.code).toBe(0);
    // The scripted engine answers as it always does; the SmolLM2 tests check the answer conforms.
    expect(result.stdout.trim()).toBe("You said: hello");
  });

  test.each([
    ["missing.json", /--output-schema missing\.json: no such file/],
    ["broken.json", /--output-schema broken\.json: not JSON/],
    ["list.json", /--output-schema list\.json: a JSON Schema is a JSON object/],
    ["deep.json", /--output-schema deep\.json: .*at most 24 levels deep/],
  ])(
    "a schema file it cannot use (%s) is a clear error and exit 2, before anything starts",
    async (file, message) => {
      const result = await runSpark(["exec", "--output-schema", file, "hello"], repo, {
        SPARK_SESSIONS_DIR: sessions,
      });
      expect(result.code).toBe(EXIT_USAGE);
      expect(result.stderr).toMatch(message);
      expect(result.stderr).not.toMatch(/\n\s+at /);
      expect(result.stdout).toBe("");
    },
  );
});
