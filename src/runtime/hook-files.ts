import { readFile, realpath, stat } from "node:fs/promises";
import path from "node:path";
import { type HookDefinition, MAX_HOOKS_FILE_BYTES, parseHooksFile } from "../agent/hooks/hooks-file.js";
import type { HookSet } from "../agent/hooks/thread-hooks.js";
import { projectHooksPath, projectHooksTrustStatus } from "../config/project-trust.js";
import { userConfigPath } from "../config/spark-config.js";
import { SparkError } from "../protocol/errors.js";

export interface LoadHooksOptions {
  /** Where the config folder and the trust file are found. Default: process.env. */
  env?: NodeJS.ProcessEnv;
  /** The trusted-projects file. Default: trustFilePath(env). */
  trustFile?: string;
}

/** The user's hooks file: `hooks.json` beside the user's config.toml (see userConfigPath). */
export function userHooksPath(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(path.dirname(userConfigPath(env)), "hooks.json");
}

/**
 * The hooks of a session in `cwd`: the user's (`~/.config/spark/hooks.json`), then the project's
 * (`.spark/hooks.json`, which no tool and no sandboxed command may write) once `spark trust` trusted
 * that very file and the files inside the project its hooks name (a `git pull` may change a
 * script). A malformed file runs nothing and an untrusted project's hooks are skipped; each says so
 * in a notice, never an error that stops the session.
 */
export async function loadHooks(cwd: string, options: LoadHooksOptions = {}): Promise<HookSet> {
  const env = options.env ?? process.env;
  const hooks: HookDefinition[] = [];
  const notices: string[] = [];
  const user = await readHooksFile(userHooksPath(env), notices);
  if (user) hooks.push(...user.hooks);
  const root = await realpath(cwd);
  const file = projectHooksPath(root);
  const project = await readHooksFile(file, notices);
  if (project && project.hooks.length > 0) {
    const trust = await projectHooksTrustStatus(root, project.text, {
      ...(options.env ? { env: options.env } : {}),
      ...(options.trustFile ? { trustFile: options.trustFile } : {}),
    });
    if (trust.status === "trusted") hooks.push(...project.hooks);
    else {
      const why =
        trust.status === "untrusted"
          ? "the project is not trusted (read it"
          : `${trust.changed.join(", ")} changed since you trusted the project's hooks (read what changed`;
      notices.push(
        `Skipped the ${count(project.hooks.length)} of ${file}: ${why}, then run \`spark trust\`).`,
      );
    }
  }
  return { hooks, notices };
}

/** The file's hooks, or null when it does not exist or is malformed (said in `notices`). */
async function readHooksFile(
  file: string,
  notices: string[],
): Promise<{ text: string; hooks: HookDefinition[] } | null> {
  try {
    if ((await stat(file)).size > MAX_HOOKS_FILE_BYTES) {
      notices.push(`${file} is over ${MAX_HOOKS_FILE_BYTES / 1024} KiB: none of its hooks run.`);
      return null;
    }
    const text = await readFile(file, "utf8");
    const parsed = parseHooksFile(text, file);
    notices.push(...parsed.skipped);
    return { text, hooks: parsed.hooks };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    notices.push(
      error instanceof SparkError
        ? error.message
        : `${file} could not be read (${(error as Error).message}): none of its hooks run.`,
    );
    return null;
  }
}

const count = (n: number) => (n === 1 ? "1 hook" : `${n} hooks`);
