import { readdir, rm } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { readIfExists, sparkStateDir, writePrivateFile } from "./private-files.js";

/**
 * What a running `spark serve` tells local clients (the terminal, the VS Code extension) about
 * itself: one file per port, `<state dir>/servers/<port>.json`, mode 0600.
 */
export const serverStateSchema = z
  .object({
    port: z.number().int().min(1).max(65535),
    /** The key clients send as `Authorization: Bearer <key>`; null when started with `--no-auth`. */
    key: z.string().min(1).max(1024).nullable(),
    pid: z.number().int().min(1),
    /** The directory the server's agent works in. */
    workspace: z.string().min(1).max(4096),
    /** `http://HOST:PORT`, without `/v1`. */
    url: z.url().max(2048),
    /** ISO 8601. */
    started_at: z.iso.datetime(),
  })
  .strict();

export type ServerState = z.infer<typeof serverStateSchema>;

/** The largest state file read; anything bigger is not Spark's. */
const MAX_STATE_BYTES = 64 * 1024;

export interface ServerStateOptions {
  /** Where `SPARK_HOME` / `XDG_STATE_HOME` are read. Default: `process.env`. */
  env?: NodeJS.ProcessEnv;
}

/** `<state dir>/servers` (see sparkStateDir). */
export function serverStateDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(sparkStateDir(env), "servers");
}

/** Records a running server; returns the file written. An older file for the port is replaced. */
export async function writeServerState(
  state: ServerState,
  options: ServerStateOptions = {},
): Promise<string> {
  const file = path.join(serverStateDir(options.env), `${state.port}.json`);
  await writePrivateFile(file, `${JSON.stringify(serverStateSchema.parse(state), null, 2)}\n`);
  return file;
}

/** Removes `file` if it still describes process `pid` (a later server may have replaced it). */
export async function removeServerState(file: string, pid: number = process.pid): Promise<void> {
  const state = await readServerState(file);
  if (state && state.pid !== pid) return;
  await rm(file, { force: true });
}

/** Whether process `pid` exists (one of another user's counts: it is not ours to judge). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * The servers of this user that are running, newest first. Files that are malformed, or whose
 * process is gone (a server that was killed), are skipped.
 */
export async function listServerStates(options: ServerStateOptions = {}): Promise<ServerState[]> {
  const dir = serverStateDir(options.env);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const states: ServerState[] = [];
  for (const name of names) {
    if (!/^\d+\.json$/.test(name)) continue;
    const state = await readServerState(path.join(dir, name));
    if (state && isProcessAlive(state.pid)) states.push(state);
  }
  return states.sort((a, b) => b.started_at.localeCompare(a.started_at));
}

/** The running server listening on `port` of this machine, if this user started one. */
export async function findServerState(
  port: number,
  options: ServerStateOptions = {},
): Promise<ServerState | null> {
  return (await listServerStates(options)).find((state) => state.port === port) ?? null;
}

async function readServerState(file: string): Promise<ServerState | null> {
  let text: string | null;
  try {
    text = await readIfExists(file);
  } catch {
    return null;
  }
  if (text === null || text.length > MAX_STATE_BYTES) return null;
  try {
    const parsed = serverStateSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
