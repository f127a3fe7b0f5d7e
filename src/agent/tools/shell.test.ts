import { readFileSync, watch } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { CommandSandbox } from "../sandbox/command-sandbox.js";
import { SHELL_MAX_OUTPUT_BYTES, shellTool } from "./shell.js";
import { tempWorkspace } from "./test-support/temp-workspace.js";
import type { ApprovalRequest } from "./tool.js";
import { runTool } from "./tool.js";

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A killed process whose parent has not reaped it yet is a zombie: dead all the same.
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return true;
  }
}

// Process ids printed by a command are only meaningful outside a PID namespace; the sandboxed
// equivalents of these kill tests are in shell-sandbox.test.ts.
const unsandboxed = () => new CommandSandbox({ mode: "danger-full-access" });

describe("shell", () => {
  test("asks for approval, then runs in the workspace root", async () => {
    await using t = await tempWorkspace();
    const requests: ApprovalRequest[] = [];
    const result = await runTool(
      shellTool,
      JSON.stringify({ command: "pwd; echo out; echo err >&2; exit 3" }),
      t.context({
        approve: async (request) => {
          requests.push(request);
          return true;
        },
      }),
    );
    expect(requests).toEqual([
      {
        kind: "shell",
        command: "pwd; echo out; echo err >&2; exit 3",
        cwd: t.dir,
        sandbox: "workspace-write",
      },
    ]);
    expect(result).toMatchObject({ isError: true, output: `Exit code: 3\nOutput:\n${t.dir}\nout\nerr\n` });
    expect(result.display).toEqual({
      kind: "command",
      command: "pwd; echo out; echo err >&2; exit 3",
      exitCode: 3,
      output: `${t.dir}\nout\nerr\n`,
    });
    const ok = await runTool(shellTool, '{"command":"true"}', t.context());
    expect(ok).toMatchObject({ isError: false, output: "Exit code: 0\nOutput:\n(no output)" });
  });

  test("a denied command never runs", async () => {
    await using t = await tempWorkspace();
    const result = await runTool(
      shellTool,
      JSON.stringify({ command: "touch ran" }),
      t.context({ approve: async () => false }),
    );
    expect(result).toMatchObject({
      isError: true,
      errorCode: "denied",
      output: "The user denied this command: it did not run. Do not retry it; ask what they want instead.",
    });
    await expect(readFile(join(t.dir, "ran"))).rejects.toThrow();
  });

  test("a timeout kills the whole process group (unsandboxed)", async () => {
    await using t = await tempWorkspace();
    const started = Date.now();
    const result = await runTool(
      shellTool,
      JSON.stringify({ command: "sleep 5 & echo $!; wait", timeout_ms: 300 }),
      t.context({ sandbox: unsandboxed() }),
    );
    expect(Date.now() - started).toBeLessThan(4000);
    expect(result).toMatchObject({ isError: true, errorCode: "timeout" });
    expect(result.output).toContain("timed out after 300 ms");
    const pid = Number(result.output.split("\n").at(-2));
    expect(pid).toBeGreaterThan(0);
    await expect.poll(() => isAlive(pid), { timeout: 2000 }).toBe(false);
  });

  test("an abort kills the command and answers aborted (unsandboxed)", async () => {
    await using t = await tempWorkspace();
    const controller = new AbortController();
    // Abort as soon as the command shows it is running: it writes its pid, then becomes sleep.
    const watcher = watch(t.dir, (_event, name) => {
      if (name === "pid") controller.abort();
    });
    try {
      const result = await runTool(
        shellTool,
        JSON.stringify({ command: "echo $$ > pid.tmp && mv pid.tmp pid && exec sleep 5" }),
        t.context({ signal: controller.signal, sandbox: unsandboxed() }),
      );
      expect(result).toMatchObject({ isError: true, errorCode: "aborted", output: "aborted" });
      const pid = Number(await readFile(join(t.dir, "pid"), "utf8"));
      await expect.poll(() => isAlive(pid), { timeout: 2000 }).toBe(false);
    } finally {
      watcher.close();
    }
  });

  test("long output keeps its head and tail", async () => {
    await using t = await tempWorkspace();
    const result = await runTool(
      shellTool,
      JSON.stringify({ command: "echo START; head -c 200000 /dev/zero | tr '\\0' x; echo; echo END" }),
      t.context(),
    );
    expect(result.output).toContain("START");
    expect(result.output).toContain("END");
    expect(result.output).toMatch(/\[… \d+ bytes of output omitted …\]/);
    expect(Buffer.byteLength(result.output)).toBeLessThan(SHELL_MAX_OUTPUT_BYTES + 200);
  });
});
