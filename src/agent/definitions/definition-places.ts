import { readdir, realpath } from "node:fs/promises";
import path from "node:path";
import { ToolError } from "../tools/tool-error.js";
import { Workspace } from "../workspace.js";

/** Who wrote a skill or agent: the person (their config folder) or the repository. */
export type DefinitionSource = "user" | "project";

/** Where skills and agents are read from, in precedence order (the person's first). */
export interface DefinitionPlaces {
  /** The repository root: its `.agents/skills/` and `.agents/agents/`. */
  repoRoot: string;
  /** The person's config folder (`~/.config/spark`): its `skills/` and `agents/`. Null: none. */
  userDir: string | null;
}

/** Entries of one folder looked at, at most; more are reported and left out. */
export const MAX_FOLDER_ENTRIES = 256;

export interface FolderEntry {
  /** The entry's name in its folder. */
  name: string;
  /** Its real path: inside the repository for a project's entry. */
  real: string;
  /** The path the person is told of (relative to the repository, or absolute for theirs). */
  shown: string;
  source: DefinitionSource;
}

/**
 * The entries of `kind`'s folders (`skills` or `agents`), the person's first, each folder's sorted
 * by name. A project's entry must stay inside the repository (a symlink out of it, or into `.git`
 * or `.spark`, is reported, never followed): the repository is untrusted, like its AGENTS.md.
 */
export async function folderEntries(
  places: DefinitionPlaces,
  kind: "skills" | "agents",
  problems: string[],
): Promise<FolderEntry[]> {
  const entries: FolderEntry[] = [];
  if (places.userDir) {
    const dir = path.join(places.userDir, kind);
    for (const name of await names(dir, problems)) {
      const shown = path.join(dir, name);
      try {
        entries.push({ name, real: await realpath(shown), shown, source: "user" });
      } catch (error) {
        problems.push(`${shown} was not read (${codeOf(error)}).`);
      }
    }
  }
  const repo = new Workspace(places.repoRoot);
  const relativeDir = path.join(".agents", kind);
  for (const name of await names(path.join(repo.root, relativeDir), problems)) {
    const shown = path.join(relativeDir, name);
    try {
      entries.push({ name, real: await repo.resolve(shown), shown, source: "project" });
    } catch (error) {
      const why = error instanceof ToolError ? error.message : codeOf(error);
      problems.push(`${shown} was not read: ${why}`);
    }
  }
  return entries;
}

async function names(dir: string, problems: string[]): Promise<string[]> {
  let found: string[];
  try {
    found = await readdir(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "ENOENT" && code !== "ENOTDIR") problems.push(`${dir} was not read (${codeOf(error)}).`);
    return [];
  }
  // Code-point order, not locale order: the prompt must not change with the machine's locale.
  found.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  if (found.length > MAX_FOLDER_ENTRIES) {
    problems.push(
      `${dir} has ${found.length} entries; only the first ${MAX_FOLDER_ENTRIES} (by name) are read.`,
    );
    found = found.slice(0, MAX_FOLDER_ENTRIES);
  }
  return found.filter((name) => !name.startsWith("."));
}

export function codeOf(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? (error as Error).message;
}
