import { lstat } from "node:fs/promises";
import { join } from "node:path";
import type { SandboxMode } from "../../protocol/agent.js";
import { ToolError } from "../tools/tool-error.js";
import { bubblewrapArgs, probeBubblewrap } from "./bubblewrap.js";
import { linkedGitDir } from "./linked-git-dir.js";
import { sandboxEnv } from "./sandbox-env.js";

export type { SandboxMode } from "../../protocol/agent.js";

/** Workspace entries a sandboxed command may read but not change: hooks and Spark's own config run later, outside. */
const PROTECTED_ENTRIES = [".git", ".spark"];

export interface CommandSandboxOptions {
  /** Default: `workspace-write`. */
  mode?: SandboxMode;
  /** The bubblewrap executable. Default: `bwrap`, found on PATH. */
  bwrapPath?: string;
  /** The environment commands pick their variables from (see sandboxEnv). Default: process.env. */
  env?: NodeJS.ProcessEnv;
}

/** What to spawn for one command. */
export interface SandboxedSpawn {
  file: string;
  args: string[];
  env: Record<string, string>;
}

/**
 * Where approved commands run: under bubblewrap (see bubblewrapArgs) unless the mode is
 * `danger-full-access`; with an allowlisted environment in every mode. Where bubblewrap is missing
 * or cannot start, commands are refused, never run unsandboxed.
 */
export class CommandSandbox {
  readonly mode: SandboxMode;
  private readonly bwrapPath: string;
  private readonly env: NodeJS.ProcessEnv;

  constructor(options: CommandSandboxOptions = {}) {
    this.mode = options.mode ?? "workspace-write";
    this.bwrapPath = options.bwrapPath ?? "bwrap";
    this.env = options.env ?? process.env;
  }

  /**
   * Throws a ToolError `sandbox_unavailable` when this mode needs bubblewrap and it does not work
   * here (checked once per process), saying how to fix it or opt out.
   */
  async ensureAvailable(): Promise<void> {
    if (this.mode === "danger-full-access") return;
    const problem =
      process.platform === "linux"
        ? await probeBubblewrap(this.bwrapPath)
        : `commands are only sandboxed on Linux (this is ${process.platform})`;
    if (problem === null) return;
    throw new ToolError(
      "sandbox_unavailable",
      `The command did not run: it must run in a sandbox (--sandbox ${this.mode}), and ${problem}. ` +
        "The person can install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`; Fedora: " +
        "`sudo dnf install bubblewrap`), or opt out of the sandbox explicitly with `--sandbox danger-full-access` " +
        '(or `sandbox = "danger-full-access"` in ~/.config/spark/config.toml). Do not retry the command until then.',
    );
  }

  /** How to run `bash -c command` in `workspaceRoot` (a real path) under this sandbox. */
  async spawnFor(
    command: string,
    workspaceRoot: string,
    alsoReadable: readonly string[] = [],
  ): Promise<SandboxedSpawn> {
    await this.ensureAvailable();
    const env = sandboxEnv(this.env);
    const bash = ["bash", "-c", command];
    if (this.mode === "danger-full-access") return { file: "bash", args: bash.slice(1), env };
    const readOnly: string[] = [];
    // `alsoReadable`: what a command from Spark's own install needs to read, which the sandbox's
    // private /tmp would hide when Spark is installed there.
    for (const path of [...PROTECTED_ENTRIES.map((entry) => join(workspaceRoot, entry)), ...alsoReadable]) {
      if (await exists(path)) readOnly.push(path);
    }
    // A linked worktree's repository (outside the workspace): readable for git, never writable.
    const gitDir = await linkedGitDir(workspaceRoot);
    if (gitDir) readOnly.push(gitDir);
    const args = bubblewrapArgs({
      writable: [workspaceRoot],
      readOnly,
      network: this.mode === "workspace-write-network",
      cwd: workspaceRoot,
    });
    return { file: this.bwrapPath, args: [...args, ...bash], env };
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}
