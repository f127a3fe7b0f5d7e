import { execFileSync, spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, test } from "vitest";
import { sparkBin as bin } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

/** A task whose scripted echo, at 20 tokens a second, would stream for about half a minute. */
const longTask = Array.from({ length: 300 }, (_, i) => `word${i}`).join(" ");

/**
 * Runs the built binary like `spark exec ... | head -c 1`: the reading end of stdout closes after
 * the first chunk.
 */
function execClosingStdout(args: string[], cwd: string, sessions: string) {
  return new Promise<{ code: number | null; signal: string | null; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [bin, "exec", ...args], {
      cwd,
      env: { ...process.env, SPARK_SESSIONS_DIR: sessions, ...testEngineEnv({ tokensPerSecond: 20 }) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout.once("data", () => child.stdout.destroy());
    let stderr = "";
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.on("exit", (code, signal) => resolve({ code, signal, stderr }));
  });
}

async function transcriptItems(sessions: string): Promise<{ type: string; text?: string }[]> {
  const [file] = await readdir(sessions);
  const lines = (await readFile(path.join(sessions, file!), "utf8")).trim().split("\n");
  return lines
    .map((line) => JSON.parse(line) as { kind: string; item?: { type: string; text?: string } })
    .flatMap((record) => (record.kind === "item" && record.item ? [record.item] : []));
}

describe("spark exec whose reader goes away (the built binary)", () => {
  let repo: string;
  beforeAll(async () => {
    repo = await mkdtemp(path.join(os.tmpdir(), "spark-epipe-"));
    await writeFile(path.join(repo, "main.ts"), "console.log('hi');\n");
    execFileSync("git", ["init", "-q"], { cwd: repo });
  });

  for (const mode of [["--json"], []]) {
    test(`${mode.join(" ") || "text"}: exits 141 without a stack trace and stops the turn`, async () => {
      const sessions = await mkdtemp(path.join(os.tmpdir(), "spark-epipe-sessions-"));
      const result = await execClosingStdout([...mode, longTask], repo, sessions);
      expect(result.stderr).toBe("");
      expect(result).toMatchObject({ code: 141, signal: null });
      // The turn stopped: the agent's whole echo never completed.
      const items = await transcriptItems(sessions);
      expect(items[0]).toMatchObject({ type: "user_message", text: longTask });
      const echoed = items.find((item) => item.type === "agent_message")?.text ?? "";
      expect(echoed.length).toBeLessThan(`You said: ${longTask}`.length);
    });
  }
});

describe("help whose reader goes away (the built binary)", () => {
  for (const args of [["serve", "--help"], ["--help"], ["--version"]]) {
    test(`spark ${args.join(" ")} | (a reader that closes at once): exits 0 without a stack trace`, async () => {
      const child = spawn(process.execPath, [bin, ...args], { stdio: ["ignore", "pipe", "pipe"] });
      child.stdout.destroy();
      let stderr = "";
      child.stderr.on("data", (chunk) => {
        stderr += chunk;
      });
      const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
      expect(stderr).toBe("");
      expect(code).toBe(0);
    });
  }
});
