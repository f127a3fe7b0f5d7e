import { createHash } from "node:crypto";
import { existsSync, watch } from "node:fs";
import { access, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { runProcess, sparkBin } from "../../test-support/spark-binary.js";

/**
 * acpx (openclaw's headless ACP client, from npm) driving `spark acp` as a person would run it:
 * `acpx --agent 'node bin/spark.js acp' ...`. With `--format json` acpx prints every JSON-RPC
 * message of the connection, one per line (and, for its own commands, one result object).
 */

/** Where `npm run fetch:acpx` (scripts/fetch-acpx.mjs; `.ci/run` runs it) installs acpx. */
export const acpxCli = path.join(
  process.env.SPARK_ACPX_DIR || path.join(os.homedir(), ".cache", "spark", "acpx", "0.19.1"),
  "node_modules",
  "acpx",
  "dist",
  "cli.js",
);

/** Why the acpx tests skip (acpx is not fetched), or undefined when it is there. */
export const acpxMissing = existsSync(acpxCli)
  ? undefined
  : `acpx is not installed (${acpxCli}): run npm run fetch:acpx`;

/** A JSON-RPC message as acpx prints it, or the result object of one of its own commands. */
export interface AcpxMessage {
  jsonrpc?: "2.0";
  id?: number | string | null;
  method?: string;
  params?: Record<string, unknown> & { update?: Record<string, unknown> & { sessionUpdate: string } };
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: Record<string, unknown> };
  action?: string;
  [field: string]: unknown;
}

export interface AcpxRun {
  code: number | null;
  messages: AcpxMessage[];
  stderr: string;
}

export interface AcpxOptions {
  /** The workspace (`--cwd`, and the process's). */
  cwd: string;
  /** acpx's and Spark's environment; its HOME holds acpx's sessions and queue locks. */
  env: NodeJS.ProcessEnv;
}

/** Runs acpx with Spark (the test binary) as its agent, to its end; `args` go after the global flags. */
export async function runAcpx(args: string[], { cwd, env }: AcpxOptions): Promise<AcpxRun> {
  const agent = `${process.execPath} ${sparkBin} acp`;
  const { code, stdout, stderr } = await runProcess(
    process.execPath,
    [
      acpxCli,
      "--agent",
      agent,
      "--cwd",
      cwd,
      "--format",
      "json",
      "--json-strict",
      "--timeout",
      "60",
      "--ttl",
      "1",
      ...args,
    ],
    { cwd, env },
  );
  // Every line acpx printed is JSON: Spark's stdout carried protocol only.
  const messages = stdout
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as AcpxMessage);
  return { code, messages, stderr };
}

/** The session updates of a run, of one kind. */
export function updates(run: AcpxRun, kind: string): Record<string, unknown>[] {
  return run.messages.flatMap((message) =>
    message.method === "session/update" && message.params?.update?.sessionUpdate === kind
      ? [message.params.update]
      : [],
  );
}

/** The text of a run's chunks of one kind (`agent_message_chunk`, `agent_thought_chunk`). */
export function chunkText(run: AcpxRun, kind: string): string {
  return updates(run, kind)
    .map((update) => (update.content as { text?: string }).text ?? "")
    .join("");
}

/** The answer to the (first) request of `method` (matched by id; agent and client number theirs apart). */
export function answerTo(run: AcpxRun, method: string): AcpxMessage | undefined {
  const requestAt = run.messages.findIndex(
    (message) => message.method === method && message.id !== undefined,
  );
  if (requestAt === -1) return undefined;
  const { id } = run.messages[requestAt]!;
  return run.messages
    .slice(requestAt + 1)
    .find((message) => message.id === id && message.method === undefined);
}

const exists = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  );

/**
 * Resolves once no acpx queue owner of `home` holds a lock (each removes its lock file as it
 * exits): a persistent session's owner (and its `spark acp`) lives on for --ttl after its prompt.
 */
export async function acpxOwnersGone(home: string): Promise<void> {
  const queues = path.join(home, ".acpx", "queues");
  if (!(await exists(queues))) return;
  const empty = async () => (await readdir(queues)).filter((name) => name.endsWith(".lock")).length === 0;
  await new Promise<void>((resolve, reject) => {
    const watcher = watch(queues, () => {
      empty().then((done) => {
        if (done) {
          watcher.close();
          resolve();
        }
      }, reject);
    });
    // Checked after the watch began, so a removal in between is not missed.
    empty().then((done) => {
      if (done) {
        watcher.close();
        resolve();
      }
    }, reject);
  });
}

/** Waits for the queue owners of `home` to end, then removes acpx's queue sockets outside it. */
export async function cleanUpAcpx(home: string): Promise<void> {
  await acpxOwnersGone(home);
  // acpx puts its queue sockets in /tmp/acpx-<hash of HOME> (its ipc module), whatever TMPDIR says.
  await rm(path.join("/tmp", `acpx-${createHash("sha256").update(home).digest("hex").slice(0, 10)}`), {
    recursive: true,
    force: true,
  });
}
