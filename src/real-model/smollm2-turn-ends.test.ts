import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, test } from "vitest";
import { defaultMaxOutputTokens } from "../agent/request-settings.js";
import { TURN_END_REASONS } from "../protocol/agent.js";
import { FETCH_SMOLLM2, smollm2Path } from "./test-support/smollm2.js";
import { sparkExec } from "./test-support/spark-exec.js";

/**
 * The prompt that once made `spark exec` on SmolLM2 write nested JSON for 12 minutes with no final
 * event. Greedy decoding, a fixed workspace: the same run each time. Whatever the model does, the
 * turn must end by itself: answered, or stopped by a limit that the final event names.
 */
const model = smollm2Path();
if (!model) console.log(`SmolLM2 turn-end test skipped: no model; fetch it with \`${FETCH_SMOLLM2}\``);

describe.skipIf(!model)("SmolLM2: a reply that would run forever ends by itself", () => {
  const timeout = 300_000;
  const contextSize = 4096;
  let repo: string;

  beforeAll(async () => {
    repo = path.join(await realpath(os.tmpdir()), "spark-smollm2-turn-ends");
    await rm(repo, { recursive: true, force: true });
    await mkdir(path.join(repo, "src"), { recursive: true });
    execFileSync("git", ["init", "-q"], { cwd: repo });
    await writeFile(path.join(repo, "README.md"), "# demo\n");
    await writeFile(path.join(repo, "src", "app.ts"), 'export const name = "demo";\n');
  });

  test(
    '"List the files here." ends within the limits, with a final event that says how',
    async () => {
      const sessions = await mkdtemp(path.join(os.tmpdir(), "spark-smollm2-turn-ends-sessions-"));
      const run = await sparkExec(
        ["exec", "--json", "--model", model!, "--ctx-size", String(contextSize), "List the files here."],
        repo,
        { SPARK_SESSIONS_DIR: sessions },
        timeout - 10_000,
      );
      expect(run.signal, "spark exec ran past its time").toBeNull();
      const last = run.events.at(-1);
      if (last?.type !== "turn.completed") throw new Error(`no final event; stderr: ${run.stderr}`);
      const calls = run.events.filter((e) => e.type === "item.completed" && e.item.type === "tool_call");
      console.log(
        `SmolLM2 "List the files here.": ${last.status}${last.reason ? ` (${last.reason})` : ""}, ` +
          `${last.stats.outputTokens} output tokens, ${calls.length} tool calls, exit ${run.code}`,
      );
      if (last.status === "completed") expect(run.code).toBe(0);
      else {
        expect(last.status).toBe("failed");
        expect(TURN_END_REASONS).toContain(last.reason);
        expect(last.error?.message).toMatch(/^Stopped/);
        expect(run.code).toBe(1);
      }
      // Each response stops at its cap: the turn writes at most one cap per model response.
      expect(last.stats.outputTokens).toBeLessThanOrEqual(
        defaultMaxOutputTokens(contextSize) * (calls.length + 1),
      );
    },
    timeout,
  );
});
