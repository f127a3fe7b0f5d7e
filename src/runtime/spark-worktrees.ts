import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdir, realpath } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { SparkError } from "../protocol/errors.js";
import { type WorktreeRef, worktreeNameProblem } from "../protocol/worktree-name.js";

/** Longest a git command may take (a checkout of a large tree included). */
const GIT_TIMEOUT_MS = 120_000;
/** Bytes of git output read at most (a worktree list, a status). */
const GIT_MAX_OUTPUT = 16 * 1024 * 1024;
/** Branches of Spark's worktrees: `spark/NAME`. */
const BRANCH_PREFIX = "spark/";

/** Opens in progress in this process, by repository (its git directory). */
const opening = new Map<string, Promise<unknown>>();

/** One of Spark's worktrees of a repository. */
export interface SparkWorktree extends WorktreeRef {
  /** Its directory (a real path). */
  path: string;
  /** Git lost its directory (deleted by hand): `git worktree prune` forgets it. */
  missing: boolean;
}

/**
 * Where Spark's worktrees go: `$SPARK_HOME/worktrees`, else `$XDG_DATA_HOME/spark/worktrees`, else
 * `~/.local/share/spark/worktrees`, one folder per repository inside it.
 */
export function worktreesDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.SPARK_HOME) return path.join(env.SPARK_HOME, "worktrees");
  const data = env.XDG_DATA_HOME || path.join(os.homedir(), ".local", "share");
  return path.join(data, "spark", "worktrees");
}

export interface SparkWorktreesOptions {
  /** Where `SPARK_HOME` / `XDG_DATA_HOME` are read. Default: `process.env`. */
  env?: NodeJS.ProcessEnv;
}

/**
 * The git worktrees Spark made for one repository, each on its own branch `spark/NAME` in
 * `<worktreesDir>/<repo>-<hash>/NAME`, so sessions in them edit the same repository at once without
 * touching each other's files. Git does the work (`git worktree add|list|remove`); nothing is
 * written inside the repository but what git itself keeps under `.git/worktrees`.
 */
export class SparkWorktrees {
  private constructor(
    /** The main working tree (a real path). */
    readonly mainRoot: string,
    /** The repository's git directory, shared by all its worktrees (a real path). */
    readonly commonDir: string,
    /** The folder this repository's Spark worktrees go in. */
    readonly dir: string,
  ) {}

  /**
   * The repository `cwd` is in (its main tree, or any worktree of it). Throws `invalid_request`
   * (param `worktree`) outside a git repository, in a bare one, or where git is missing.
   */
  static async of(cwd: string, options: SparkWorktreesOptions = {}): Promise<SparkWorktrees> {
    let commonDir: string;
    let mainRoot: string;
    try {
      commonDir = await realpath(
        path.resolve(cwd, (await git(cwd, ["rev-parse", "--git-common-dir"])).trim()),
      );
      const main = parseWorktreeList(await git(cwd, ["worktree", "list", "--porcelain", "-z"]))[0];
      if (!main || main.bare) throw new Error("a bare repository has no working tree to branch from");
      mainRoot = await realpath(main.path);
    } catch (error) {
      throw new SparkError(
        "invalid_request",
        `Worktree sessions need a git repository, and ${cwd} is not in one (${firstLine(error)}). ` +
          "Run spark --worktree inside a repository's working tree.",
        { param: "worktree", cause: error },
      );
    }
    const key = createHash("sha256").update(mainRoot).digest("hex").slice(0, 10);
    const dir = await realpathLenient(
      path.join(worktreesDir(options.env), `${path.basename(mainRoot)}-${key}`),
    );
    return new SparkWorktrees(mainRoot, commonDir, dir);
  }

  /** Spark's worktrees of this repository (those in {@link dir}), by name. */
  async list(): Promise<SparkWorktree[]> {
    const entries = parseWorktreeList(await git(this.mainRoot, ["worktree", "list", "--porcelain", "-z"]));
    const found: SparkWorktree[] = [];
    for (const entry of entries) {
      if (path.dirname(entry.path) !== this.dir) continue;
      const name = path.basename(entry.path);
      found.push({
        name,
        branch: entry.branch ?? `${BRANCH_PREFIX}${name}`,
        path: entry.path,
        missing: entry.prunable,
      });
    }
    return found.sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The worktree called `name`, or null. */
  async find(name: string): Promise<SparkWorktree | null> {
    return (await this.list()).find((worktree) => worktree.name === name) ?? null;
  }

  /**
   * The worktree `name` (checked, see worktreeNameProblem), made when there is none: a new branch
   * `spark/NAME` from `base`'s HEAD, or that branch as it is when it exists already (a worktree
   * removed earlier). Without a name, a new one is made under a generated name.
   */
  async open(
    name?: string,
    options: { base?: string } = {},
  ): Promise<{ worktree: SparkWorktree; created: boolean }> {
    // One at a time per repository in this process: two opens of one name would both run
    // `git worktree add`, and the loser's `worktree prune` can race the winner's checkout. Other
    // processes are met by the recovery below.
    const previous = opening.get(this.commonDir) ?? Promise.resolve();
    const current = previous.catch(() => {}).then(() => this.openNow(name, options));
    opening.set(this.commonDir, current);
    try {
      return await current;
    } finally {
      if (opening.get(this.commonDir) === current) opening.delete(this.commonDir);
    }
  }

  private async openNow(
    name: string | undefined,
    options: { base?: string },
  ): Promise<{ worktree: SparkWorktree; created: boolean }> {
    if (name !== undefined) {
      const problem = worktreeNameProblem(name);
      if (problem)
        throw new SparkError("invalid_request", `'${name}' is not a worktree name: ${problem}.`, {
          param: "worktree.name",
        });
      const existing = await this.find(name);
      if (existing && !existing.missing) return { worktree: existing, created: false };
    }
    const chosen = name ?? (await this.freeName());
    await mkdir(this.dir, { recursive: true });
    const target = path.join(this.dir, chosen);
    const branch = `${BRANCH_PREFIX}${chosen}`;
    // A worktree whose folder was deleted by hand still holds its name in git until pruned.
    await git(this.mainRoot, ["worktree", "prune"]);
    const branchExists = await succeeds(this.mainRoot, [
      "rev-parse",
      "--verify",
      "--quiet",
      `refs/heads/${branch}`,
    ]);
    const base = options.base ?? this.mainRoot;
    if (!branchExists && !(await succeeds(base, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"]))) {
      throw new SparkError(
        "invalid_request",
        `${this.mainRoot} has no commit yet, and a worktree's branch starts from one: commit first.`,
        { param: "worktree" },
      );
    }
    try {
      await git(
        base,
        branchExists
          ? ["worktree", "add", target, branch]
          : ["worktree", "add", "-b", branch, target, "HEAD"],
      );
    } catch (error) {
      // Another session may have made it meanwhile.
      const made = await this.find(chosen);
      if (made && !made.missing) return { worktree: made, created: false };
      throw new SparkError("invalid_request", `Could not create worktree '${chosen}': ${firstLine(error)}`, {
        param: "worktree.name",
        cause: error,
      });
    }
    const made = await this.find(chosen);
    if (!made) throw new SparkError("server_error", `git made worktree '${chosen}' but does not list it.`);
    return { worktree: made, created: true };
  }

  /** Whether a path is one of this repository's Spark worktrees (`candidate` need not exist). */
  async owns(candidate: string): Promise<SparkWorktree | null> {
    const real = await realpath(candidate).catch(() => null);
    if (real === null || path.dirname(real) !== this.dir) return null;
    return (await this.list()).find((worktree) => worktree.path === real && !worktree.missing) ?? null;
  }

  /**
   * The worktree's uncommitted changes (`git status --porcelain` lines: modified, staged and
   * untracked files; ignored ones do not count). Empty: clean.
   */
  async changes(worktree: SparkWorktree): Promise<string[]> {
    const out = await git(worktree.path, ["status", "--porcelain=v1", "--untracked-files=normal"]);
    return out.split("\n").filter((line) => line.trim() !== "");
  }

  /**
   * Removes the worktree's folder and git's record of it; its branch stays (commits made there are
   * not lost). Refuses (`invalid_request`, naming some files) when it has uncommitted changes,
   * unless `force`.
   */
  async remove(name: string, options: { force?: boolean } = {}): Promise<SparkWorktree> {
    const worktree = await this.find(name);
    if (!worktree)
      throw new SparkError("not_found", `No worktree '${name}' in ${this.mainRoot}.`, { param: "name" });
    if (worktree.missing) {
      await git(this.mainRoot, ["worktree", "prune"]);
      return worktree;
    }
    if (!options.force) {
      const changes = await this.changes(worktree);
      if (changes.length > 0) {
        const shown = changes.slice(0, 5).map((line) => line.slice(3));
        const more = changes.length > shown.length ? `, and ${changes.length - shown.length} more` : "";
        throw new SparkError(
          "invalid_request",
          `Worktree '${name}' has uncommitted changes (${shown.join(", ")}${more}); commit them on ${worktree.branch}, ` +
            "or remove it with --force to drop them.",
          { param: "name" },
        );
      }
    }
    await git(this.mainRoot, ["worktree", "remove", ...(options.force ? ["--force"] : []), worktree.path]);
    return worktree;
  }

  /** A name no worktree or branch of Spark's has yet. */
  private async freeName(): Promise<string> {
    for (;;) {
      const name = `wt-${randomBytes(3).toString("hex")}`;
      const taken =
        (await this.find(name)) !== null ||
        (await succeeds(this.mainRoot, [
          "rev-parse",
          "--verify",
          "--quiet",
          `refs/heads/${BRANCH_PREFIX}${name}`,
        ]));
      if (!taken) return name;
    }
  }
}

interface WorktreeListEntry {
  path: string;
  branch?: string;
  bare: boolean;
  prunable: boolean;
}

/** `git worktree list --porcelain -z`: records of NUL-ended lines, each record ended by an empty one. */
function parseWorktreeList(out: string): WorktreeListEntry[] {
  const entries: WorktreeListEntry[] = [];
  let current: WorktreeListEntry | null = null;
  for (const line of out.split("\0")) {
    if (line === "") {
      if (current) entries.push(current);
      current = null;
    } else if (line.startsWith("worktree ")) {
      current = { path: line.slice("worktree ".length), bare: false, prunable: false };
    } else if (current && line.startsWith("branch refs/heads/")) {
      current.branch = line.slice("branch refs/heads/".length);
    } else if (current && line === "bare") current.bare = true;
    else if (current && (line === "prunable" || line.startsWith("prunable "))) current.prunable = true;
  }
  if (current) entries.push(current);
  return entries;
}

/**
 * Runs git in `cwd` as the person would (Spark's own environment, not the command sandbox: these
 * are Spark's actions on the person's behalf); resolves with its stdout.
 */
function git(cwd: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      "git",
      args,
      {
        cwd,
        timeout: GIT_TIMEOUT_MS,
        maxBuffer: GIT_MAX_OUTPUT,
        env: { ...process.env, GIT_TERMINAL_PROMPT: "0", LC_ALL: "C" },
      },
      (error, stdout, stderr) => {
        if (!error) return resolve(stdout);
        const said = stderr.trim() || error.message;
        reject(Object.assign(new Error(said), { cause: error }));
      },
    );
  });
}

/** Whether a git command exits 0 (a check such as `rev-parse --verify`). */
function succeeds(cwd: string, args: readonly string[]): Promise<boolean> {
  return git(cwd, args).then(
    () => true,
    () => false,
  );
}

/** The real path of `dir`, which need not exist yet (git records worktrees by real paths). */
async function realpathLenient(dir: string): Promise<string> {
  try {
    return await realpath(dir);
  } catch {
    const parent = path.dirname(dir);
    return parent === dir ? dir : path.join(await realpathLenient(parent), path.basename(dir));
  }
}

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split("\n")[0]!.replace(/^fatal: /, "");
}
