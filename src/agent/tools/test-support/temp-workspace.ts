import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { EditJournal } from "../../edit-journal.js";
import { CommandSandbox } from "../../sandbox/command-sandbox.js";
import { Workspace } from "../../workspace.js";
import type { ToolContext } from "../tool.js";

/** A workspace in a fresh temporary directory, for tests. Removed on dispose. */
export interface TempWorkspace extends AsyncDisposable {
  /** The directory's real path (the workspace root). */
  readonly dir: string;
  readonly workspace: Workspace;
  readonly journal: EditJournal;
  /**
   * A tool context on this workspace; commands count as asked for, are approved and run in the
   * default sandbox (workspace-write) unless overridden.
   */
  context(overrides?: Partial<ToolContext>): ToolContext;
  write(path: string, content: string | Buffer): Promise<void>;
  read(path: string): Promise<Buffer>;
  /** Runs git in the directory (after `git init` when created with `git: true`). */
  git(...args: string[]): string;
}

export interface TempWorkspaceOptions {
  /** Files to create, by relative path. Default: none. */
  files?: Record<string, string | Buffer>;
  /** Make the directory a git repository. Default: false. */
  git?: boolean;
}

export async function tempWorkspace(options: TempWorkspaceOptions = {}): Promise<TempWorkspace> {
  const created = await mkdtemp(join(tmpdir(), "spark-tools-"));
  const workspace = new Workspace(created);
  const dir = workspace.root;
  const journal = new EditJournal();
  const write = async (path: string, content: string | Buffer) => {
    const absolute = join(dir, path);
    await mkdir(dirname(absolute), { recursive: true });
    await writeFile(absolute, content);
  };
  const git = (...args: string[]) =>
    execFileSync("git", ["-c", "init.defaultBranch=main", ...args], { cwd: dir, encoding: "utf8" });
  if (options.git) git("init", "-q");
  for (const [path, content] of Object.entries(options.files ?? {})) await write(path, content);
  return {
    dir,
    workspace,
    journal,
    context: (overrides = {}) => ({
      workspace,
      journal,
      signal: new AbortController().signal,
      sandbox: new CommandSandbox(),
      approve: async () => true,
      ...overrides,
    }),
    write,
    read: (path) => readFile(join(dir, path)),
    git,
    async [Symbol.asyncDispose]() {
      await rm(created, { recursive: true, force: true });
    },
  };
}
