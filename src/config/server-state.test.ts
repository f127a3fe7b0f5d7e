import { spawn } from "node:child_process";
import { chmod, mkdir, mkdtemp, readdir, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ensurePrivateDir, sparkStateDir } from "./private-files.js";
import {
  findServerState,
  listServerStates,
  removeServerState,
  type ServerState,
  serverStateDir,
  writeServerState,
} from "./server-state.js";

async function home(): Promise<NodeJS.ProcessEnv> {
  return { SPARK_HOME: await mkdtemp(path.join(os.tmpdir(), "spark-state-")) };
}

function state(port: number, pid: number = process.pid): ServerState {
  return {
    port,
    key: "k".repeat(32),
    pid,
    workspace: "/repo",
    url: `http://127.0.0.1:${port}`,
    started_at: new Date().toISOString(),
  };
}

/** The pid of a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await new Promise((resolve) => child.once("exit", resolve));
  return child.pid!;
}

describe("server state files", () => {
  it("follow SPARK_HOME, then XDG_STATE_HOME, then ~/.local/state", () => {
    expect(sparkStateDir({ SPARK_HOME: "/s", XDG_STATE_HOME: "/x" })).toBe("/s");
    expect(sparkStateDir({ XDG_STATE_HOME: "/x" })).toBe(path.join("/x", "spark"));
    expect(sparkStateDir({})).toBe(path.join(os.homedir(), ".local", "state", "spark"));
  });

  it("are written 0600 in a 0700 folder, one per port, and found while the server lives", async () => {
    const env = await home();
    const file = await writeServerState(state(8080), { env });
    expect(file).toBe(path.join(serverStateDir(env), "8080.json"));
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(serverStateDir(env))).mode & 0o777).toBe(0o700);
    await writeServerState(state(9090), { env });
    expect((await listServerStates({ env })).map((s) => s.port).sort()).toEqual([8080, 9090]);
    expect(await findServerState(9090, { env })).toMatchObject({ port: 9090, key: "k".repeat(32) });
    expect(await findServerState(7070, { env })).toBeNull();
    // No temporary files are left behind.
    expect((await readdir(serverStateDir(env))).sort()).toEqual(["8080.json", "9090.json"]);
  });

  it("skip a dead server's file and malformed files", async () => {
    const env = await home();
    await writeServerState(state(8080, await deadPid()), { env });
    await writeFile(path.join(serverStateDir(env), "9090.json"), '{"port": "nope"}');
    await writeFile(path.join(serverStateDir(env), "9091.json"), "{");
    expect(await listServerStates({ env })).toEqual([]);
    expect(await listServerStates({ env: { SPARK_HOME: path.join(env.SPARK_HOME!, "none") } })).toEqual([]);
  });

  it("are removed only by the server they describe", async () => {
    const env = await home();
    const file = await writeServerState(state(8080), { env });
    await removeServerState(file, process.pid + 1);
    expect(await findServerState(8080, { env })).not.toBeNull();
    await removeServerState(file);
    expect(await findServerState(8080, { env })).toBeNull();
  });

  it("refuse a value outside the schema", async () => {
    const env = await home();
    await expect(writeServerState({ ...state(8080), port: 0 }, { env })).rejects.toThrow();
  });

  it("tighten an existing folder that others could read", async () => {
    const dir = path.join((await home()).SPARK_HOME!, "loose");
    await mkdir(dir, { mode: 0o755 });
    await chmod(dir, 0o755);
    await ensurePrivateDir(dir);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
  });
});
