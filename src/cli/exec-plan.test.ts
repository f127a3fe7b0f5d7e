import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { beforeAll, expect, test } from "vitest";
import { runSpark } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

const APP = "export const port = 8080;\n";
const PATCH =
  "*** Begin Patch\n*** Update File: app.ts\n@@\n-export const port = 8080;\n+export const port = 9090;\n*** End Patch";

let repo: string;
let sessions: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  repo = await mkdtemp(path.join(os.tmpdir(), "spark-exec-plan-"));
  sessions = await mkdtemp(path.join(os.tmpdir(), "spark-sessions-"));
  await writeFile(path.join(repo, "app.ts"), APP);
  execFileSync("git", ["init", "-q"], { cwd: repo });
  const script = path.join(sessions, "script.json");
  await writeFile(
    script,
    JSON.stringify([
      { match: "port", toolCalls: [{ name: "apply_patch", arguments: JSON.stringify({ patch: PATCH }) }] },
      { text: "Plan: set the port to 9090 in app.ts." },
    ]),
  );
  env = { SPARK_SESSIONS_DIR: sessions, ...testEngineEnv({ script }) };
});

const events = (stdout: string) =>
  stdout
    .trim()
    .split("\n")
    .map(
      (line) =>
        JSON.parse(line) as {
          type: string;
          item?: { type: string; name?: string; status?: string; output?: string; mode?: string };
        },
    );

test("spark exec --plan runs one plan-mode turn: the edit is refused and nothing changes", async () => {
  const planned = await runSpark(["exec", "--plan", "--json", "change the port"], repo, env);
  expect(planned.code).toBe(0);
  const items = events(planned.stdout).flatMap((e) =>
    e.type === "item.completed" && e.item ? [e.item] : [],
  );
  expect(items[0]).toMatchObject({ type: "user_message", mode: "plan" });
  expect(items[1]).toMatchObject({ type: "tool_call", name: "apply_patch", status: "failed" });
  expect(items[1]!.output).toMatch(/^Not run: plan mode is on/);
  expect(items.at(-1)).toMatchObject({ type: "agent_message" });
  expect(await readFile(path.join(repo, "app.ts"), "utf8")).toBe(APP);

  // Without --plan the same task edits.
  const done = await runSpark(["exec", "change the port"], repo, env);
  expect(done.code).toBe(0);
  expect(await readFile(path.join(repo, "app.ts"), "utf8")).toBe("export const port = 9090;\n");
});
