import { createHash } from "node:crypto";
import { realpath } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { SparkError } from "../protocol/errors.js";
import { changedScripts, hookScriptDigests } from "./hook-scripts.js";
import { readIfExists, sparkStateDir, writePrivateFile } from "./private-files.js";

/**
 * The projects whose `.spark/config.toml` the user trusts, each with the SHA-256 of the file as it
 * was trusted (of an empty text when it had none), and of its `.spark/hooks.json` when that was
 * trusted too, with each file inside the project its hooks name (see hook-scripts.ts): a changed
 * file is untrusted again.
 */
const trustFileSchema = z
  .object({
    version: z.literal(1),
    projects: z.record(
      z.string().min(1).max(4096),
      z
        .object({
          sha256: z.string().regex(/^[0-9a-f]{64}$/),
          hooks_sha256: z
            .string()
            .regex(/^[0-9a-f]{64}$/)
            .optional(),
          /** The files the hooks name, by path relative to the project: their SHA-256 as trusted. */
          hook_scripts: z.record(z.string().min(1).max(4096), z.string().regex(/^[0-9a-f]{64}$/)).optional(),
          trusted_at: z.iso.datetime(),
        })
        .strict(),
    ),
  })
  .strict();

type TrustFile = z.infer<typeof trustFileSchema>;

export interface TrustedProject {
  /** The project directory's real path. */
  root: string;
  sha256: string;
  /** The SHA-256 of its `.spark/hooks.json` as trusted; absent: its hooks are not trusted. */
  hooks_sha256?: string;
  /** The files its hooks name, relative to `root`, with their SHA-256 as trusted (with the hooks). */
  hook_scripts?: Record<string, string>;
  trusted_at: string;
}

/** `trusted` (this very file), `changed` (trusted, but the file differs since), or `untrusted`. */
export type ProjectTrustStatus = "trusted" | "changed" | "untrusted";

export interface TrustOptions {
  /** Where `SPARK_HOME` / `XDG_STATE_HOME` are read. Default: `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** The trust file. Default: {@link trustFilePath}. */
  trustFile?: string;
}

/** `<state dir>/trusted-projects.json` (see sparkStateDir), mode 0600. */
export function trustFilePath(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(sparkStateDir(env), "trusted-projects.json");
}

/** A project's own config file. */
export function projectConfigPath(root: string): string {
  return path.join(root, ".spark", "config.toml");
}

export function configDigest(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** A project's own hooks file (see the agent's hooks-file.ts). */
export function projectHooksPath(root: string): string {
  return path.join(root, ".spark", "hooks.json");
}

/** Whether the project at `root` (a real path) is trusted with a file of this digest. */
export async function projectTrustStatus(
  root: string,
  sha256: string,
  options: TrustOptions = {},
): Promise<ProjectTrustStatus> {
  // An unreadable trust file trusts nothing.
  const trusted = (await readTrustFile(options).catch(() => null))?.projects[root];
  if (!trusted) return "untrusted";
  return trusted.sha256 === sha256 ? "trusted" : "changed";
}

/**
 * Whether the person trusts the project in `dir` as it is now (its config file unchanged since, or
 * still absent): what language servers that run the project's own programs wait for.
 */
export async function isProjectTrusted(dir: string, options: TrustOptions = {}): Promise<boolean> {
  const root = await realpath(dir);
  const text = await readIfExists(projectConfigPath(root));
  return (await projectTrustStatus(root, configDigest(text ?? ""), options)) === "trusted";
}

/** Whether a project's hooks may run; when `changed`, the files that differ from the trusted ones. */
export interface HooksTrust {
  status: ProjectTrustStatus;
  /** `.spark/hooks.json` and the scripts it names (relative to the project) that changed, appeared or went. */
  changed: string[];
}

/**
 * Whether the project at `root` (a real path) is trusted to run this hooks file (its text): the
 * file and every file inside the project it names must be as they were trusted.
 */
export async function projectHooksTrustStatus(
  root: string,
  hooksText: string,
  options: TrustOptions = {},
): Promise<HooksTrust> {
  const trusted = (await readTrustFile(options).catch(() => null))?.projects[root];
  if (!trusted?.hooks_sha256) return { status: "untrusted", changed: [] };
  const changed = changedScripts(trusted.hook_scripts ?? {}, await hookScriptDigests(root, hooksText));
  if (trusted.hooks_sha256 !== configDigest(hooksText)) changed.unshift(".spark/hooks.json");
  return { status: changed.length === 0 ? "trusted" : "changed", changed };
}

/**
 * Trusts the project in `dir` with its config file as it is now, and with its hooks file and the
 * files inside the project it names as they are now unless `hooks` is false (then the hooks keep
 * the trust they had).
 */
export async function trustProject(
  dir: string,
  options: TrustOptions & { hooks?: boolean } = {},
): Promise<TrustedProject> {
  const root = await realpath(dir);
  const text = await readIfExists(projectConfigPath(root));
  // Without either file, the trust is of the project's code (language servers that run it).
  const hooks = options.hooks === false ? null : await readIfExists(projectHooksPath(root));
  const trust = await readTrustFile(options);
  const previous = trust.projects[root];
  const hooksTrust =
    options.hooks === false
      ? previous?.hooks_sha256
        ? {
            hooks_sha256: previous.hooks_sha256,
            ...(previous.hook_scripts ? { hook_scripts: previous.hook_scripts } : {}),
          }
        : {}
      : hooks !== null
        ? { hooks_sha256: configDigest(hooks), hook_scripts: await hookScriptDigests(root, hooks) }
        : {};
  const record = {
    sha256: configDigest(text ?? ""),
    ...hooksTrust,
    trusted_at: new Date().toISOString(),
  };
  trust.projects[root] = record;
  await writeTrustFile(trust, options);
  return { root, ...record };
}

/** Stops trusting the project in `dir`; false when it was not trusted. */
export async function revokeProject(dir: string, options: TrustOptions = {}): Promise<boolean> {
  const root = await realpath(dir).catch(() => path.resolve(dir));
  const trust = await readTrustFile(options);
  if (!trust.projects[root]) return false;
  delete trust.projects[root];
  await writeTrustFile(trust, options);
  return true;
}

export async function listTrustedProjects(options: TrustOptions = {}): Promise<TrustedProject[]> {
  const trust = await readTrustFile(options);
  return Object.entries(trust.projects)
    .map(([root, record]) => ({ root, ...record }))
    .sort((a, b) => a.root.localeCompare(b.root));
}

async function readTrustFile(options: TrustOptions): Promise<TrustFile> {
  const file = options.trustFile ?? trustFilePath(options.env);
  const text = await readIfExists(file);
  if (text === null) return { version: 1, projects: {} };
  const parsed = (() => {
    try {
      return trustFileSchema.safeParse(JSON.parse(text));
    } catch {
      return null;
    }
  })();
  if (!parsed?.success) {
    throw new SparkError("invalid_request", `${file} is not a valid trust file: fix or delete it.`);
  }
  return parsed.data;
}

async function writeTrustFile(trust: TrustFile, options: TrustOptions): Promise<void> {
  const file = options.trustFile ?? trustFilePath(options.env);
  await writePrivateFile(file, `${JSON.stringify(trust, null, 2)}\n`);
}
