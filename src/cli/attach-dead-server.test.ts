import { spawn } from "node:child_process";
import { afterAll, expect, test } from "vitest";
import { sparkBin, startWorkspaceServe, type WorkspaceServe } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

let serve: WorkspaceServe | null = null;
afterAll(async () => {
  await serve?.stop();
});

test("spark exec attached to a server that dies mid-turn ends with a clear error, not a hang", async () => {
  serve = await startWorkspaceServe([], testEngineEnv({ tokensPerSecond: 20 }));
  const words = Array.from({ length: 300 }, (_, i) => `word${i}`).join(" ");
  const exec = spawn(process.execPath, [sparkBin, "exec", "--json", words], {
    cwd: serve.repo,
    env: serve.env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  exec.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => exec.once("exit", (code) => resolve(code)));
  await new Promise<void>((resolve) => {
    exec.stdout.on("data", (chunk) => {
      stdout += chunk;
      if (stdout.includes('"item.delta"')) resolve();
    });
  });
  serve.child.kill("SIGKILL");
  const code = await exited;
  expect(code).not.toBe(0);
  expect(stderr).toMatch(/^spark: Lost the connection to spark serve at \S+127\.0\.0\.1:\d+/m);
  expect(stderr).not.toMatch(/\n\s+at /);
}, 60_000);
