import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, readdirSync, readFileSync, watch } from "node:fs";
import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, test, vi } from "vitest";
import { CommandSandbox, type SandboxMode } from "../sandbox/command-sandbox.js";
import { shellTool } from "./shell.js";
import { type TempWorkspace, tempWorkspace } from "./test-support/temp-workspace.js";
import { type ApprovalRequest, runTool, type ToolContext } from "./tool.js";

// These run real commands under the real /usr/bin/bwrap (`apt-get install bubblewrap`).

function shell(
  t: TempWorkspace,
  command: string,
  overrides: Partial<ToolContext> & { timeout_ms?: number } = {},
) {
  const { timeout_ms, ...context } = overrides;
  return runTool(
    shellTool,
    JSON.stringify({ command, ...(timeout_ms ? { timeout_ms } : {}) }),
    t.context(context),
  );
}

function sandbox(mode: SandboxMode): CommandSandbox {
  return new CommandSandbox({ mode });
}

/** Host processes whose command line contains `marker` (zombies have none). */
function processesWith(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(marker)) pids.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

/**
 * A command that starts a background `sleep` named `marker` (with `setsid`: in a session and
 * process group of its own), waits until it runs, says so (and touches `started` in the
 * workspace), then waits or exits. The marker is built from a variable so that bash's own command
 * line does not contain it.
 */
function backgroundChild(marker: string, options: { andThen: "wait" | "exit"; setsid?: boolean }): string {
  const named = `$m${marker.slice(5)}`;
  const start = options.setsid
    ? `setsid bash -c "exec -a ${named} sleep 1000" &`
    : `(exec -a ${named} sleep 1000) &`;
  return (
    `m=${marker.slice(0, 5)}; ${start} ` +
    `until tr '\\0' ' ' < /proc/$!/cmdline 2>/dev/null | grep -q ${named}; do :; done; ` +
    `echo started; touch started; ${options.andThen === "wait" ? "wait" : "exit 0"}`
  );
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe("shell in the workspace-write sandbox", () => {
  test("writes inside the workspace land; writes elsewhere on the filesystem fail", async () => {
    await using t = await tempWorkspace();
    // Not under /tmp, which the sandbox replaces with its own.
    const outside = await mkdtemp(join(homedir(), ".spark-sandbox-test-"));
    try {
      const result = await shell(t, `echo in > inside.txt && echo out > ${outside}/x`);
      expect(await t.read("inside.txt")).toEqual(Buffer.from("in\n"));
      expect(result.isError).toBe(true);
      expect(result.output).toContain("Read-only file system");
      expect(existsSync(join(outside, "x"))).toBe(false);
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  test(".git and .spark are read-only (hooks cannot be planted), yet readable", async () => {
    await using t = await tempWorkspace({
      git: true,
      files: { ".spark/config.toml": "default_tier = 'fast'\n" },
    });
    const result = await shell(
      t,
      "cat .git/HEAD; echo x > .git/hooks/post-checkout; echo y > .git/config2; echo z > .spark/config.toml; " +
        "echo w > .spark/new; exit 0",
    );
    expect(result.output).toContain("ref: refs/heads/main");
    expect(result.output.match(/Read-only file system/g)).toHaveLength(4);
    expect(existsSync(join(t.dir, ".git/hooks/post-checkout"))).toBe(false);
    expect(existsSync(join(t.dir, ".git/config2"))).toBe(false);
    expect(existsSync(join(t.dir, ".spark/new"))).toBe(false);
    expect((await t.read(".spark/config.toml")).toString()).toBe("default_tier = 'fast'\n");
  });

  test("/tmp is private: the command can use it, the host never sees the file", async () => {
    await using t = await tempWorkspace();
    const name = `/tmp/spark-sandbox-${randomUUID()}`;
    const result = await shell(t, `echo secret > ${name} && cat ${name}`);
    expect(result).toMatchObject({ isError: false, output: "Exit code: 0\nOutput:\nsecret\n" });
    expect(existsSync(name)).toBe(false);
  });

  test("no network: a loopback listener on the host is unreachable; reachable with workspace-write-network", async () => {
    await using t = await tempWorkspace();
    let connections = 0;
    let connected: () => void = () => {};
    const firstConnection = new Promise<void>((resolve) => {
      connected = resolve;
    });
    const server = createServer((socket) => {
      connections++;
      connected();
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    const connect = `exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected`;
    try {
      const denied = await shell(t, connect);
      expect(denied.isError).toBe(true);
      expect(denied.output).not.toContain("connected");
      expect(connections).toBe(0);

      const allowed = await shell(t, connect, { sandbox: sandbox("workspace-write-network") });
      expect(allowed).toMatchObject({ isError: false, output: "Exit code: 0\nOutput:\nconnected\n" });
      await firstConnection;
      expect(connections).toBe(1);
    } finally {
      server.close();
    }
  });

  test("a timeout kills a background child that left the process group", async () => {
    await using t = await tempWorkspace();
    const marker = `spark-marker-${randomUUID()}`;
    const result = await shell(t, backgroundChild(marker, { andThen: "wait", setsid: true }), {
      timeout_ms: 3000,
    });
    expect(result).toMatchObject({ isError: true, errorCode: "timeout" });
    expect(result.output).toContain("started");
    await expect.poll(() => processesWith(marker), { timeout: 5000 }).toEqual([]);
  });

  test("an abort kills the command's background children", async () => {
    await using t = await tempWorkspace();
    const marker = `spark-marker-${randomUUID()}`;
    const controller = new AbortController();
    const watcher = watch(t.dir, (_event, name) => {
      if (name === "started") controller.abort();
    });
    try {
      const result = await shell(t, backgroundChild(marker, { andThen: "wait" }), {
        signal: controller.signal,
      });
      expect(result).toMatchObject({ isError: true, errorCode: "aborted" });
      await expect.poll(() => processesWith(marker), { timeout: 5000 }).toEqual([]);
    } finally {
      watcher.close();
    }
  });

  test("background children, even in a session of their own, die when the command exits", async () => {
    await using t = await tempWorkspace();
    const marker = `spark-marker-${randomUUID()}`;
    const result = await shell(t, backgroundChild(marker, { andThen: "exit", setsid: true }));
    expect(result).toMatchObject({ isError: false, output: "Exit code: 0\nOutput:\nstarted\n" });
    await expect.poll(() => processesWith(marker), { timeout: 5000 }).toEqual([]);
  });

  test("the process scan used above sees a live marked process", async () => {
    const marker = `spark-marker-${randomUUID()}`;
    const child = spawn("bash", ["-c", `exec -a ${marker} sleep 1000`], { stdio: "ignore" });
    try {
      await expect.poll(() => processesWith(marker)).toEqual([child.pid]);
    } finally {
      child.kill("SIGKILL");
    }
  });
});

describe("the command environment", () => {
  for (const mode of ["workspace-write", "danger-full-access"] as const) {
    test(`holds no keys or tokens (${mode})`, async () => {
      vi.stubEnv("SPARK_API_KEY", "spark-secret-1");
      vi.stubEnv("OPENAI_API_KEY", "openai-secret-2");
      vi.stubEnv("GITHUB_TOKEN", "github-secret-3");
      vi.stubEnv("LC_ALL", "C.UTF-8");
      await using t = await tempWorkspace();
      const result = await shell(t, "env", { sandbox: sandbox(mode) });
      expect(result.isError).toBe(false);
      expect(result.output).not.toMatch(/secret/);
      expect(result.output).toContain("\nPAGER=cat\n");
      expect(result.output).toContain("\nGIT_TERMINAL_PROMPT=0\n");
      expect(result.output).toContain("\nLC_ALL=C.UTF-8\n");
      expect(result.output).toContain(`\nPATH=${process.env.PATH}\n`);
    });
  }
});

describe("where bubblewrap does not work", () => {
  test("a missing bwrap refuses the command before asking, naming the fix and the opt-out", async () => {
    await using t = await tempWorkspace();
    const requests: ApprovalRequest[] = [];
    const result = await shell(t, "touch ran", {
      sandbox: new CommandSandbox({ bwrapPath: join(t.dir, "no-such-bwrap") }),
      approve: async (request) => {
        requests.push(request);
        return true;
      },
    });
    expect(result).toMatchObject({ isError: true, errorCode: "sandbox_unavailable" });
    expect(result.output).toContain("bubblewrap is not installed");
    expect(result.output).toContain("sudo apt-get install bubblewrap");
    expect(result.output).toContain("--sandbox danger-full-access");
    expect(requests).toEqual([]);
    expect(existsSync(join(t.dir, "ran"))).toBe(false);
  });

  test("a bwrap that cannot start is refused with its reason, checked once per process", async () => {
    await using t = await tempWorkspace();
    const dir = await mkdtemp(join(tmpdir(), "spark-fake-bwrap-"));
    try {
      const fake = join(dir, "bwrap");
      await writeFile(
        fake,
        `#!/bin/sh\necho probe >> ${dir}/calls\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n`,
      );
      await chmod(fake, 0o755);
      for (const _ of [1, 2]) {
        const result = await shell(t, "touch ran", { sandbox: new CommandSandbox({ bwrapPath: fake }) });
        expect(result).toMatchObject({ isError: true, errorCode: "sandbox_unavailable" });
        expect(result.output).toContain(
          "cannot start a sandbox here: bwrap: No permissions to creating new namespace",
        );
      }
      expect(await readFile(join(dir, "calls"), "utf8")).toBe("probe\n");
      expect(existsSync(join(t.dir, "ran"))).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test("danger-full-access is the explicit opt-out: it runs without bwrap, and the approval says so", async () => {
    await using t = await tempWorkspace();
    const requests: ApprovalRequest[] = [];
    const result = await shell(t, "touch ran", {
      sandbox: new CommandSandbox({ mode: "danger-full-access", bwrapPath: join(t.dir, "no-such-bwrap") }),
      approve: async (request) => {
        requests.push(request);
        return true;
      },
    });
    expect(result.isError).toBe(false);
    expect(requests).toMatchObject([{ sandbox: "danger-full-access" }]);
    expect(existsSync(join(t.dir, "ran"))).toBe(true);
  });
});
