import { readFile, stat } from "node:fs/promises";
import path from "node:path";

export interface AgentsFile {
  path: string;
  content: string;
}

/** The repository root: the nearest ancestor with a `.git`, else the directory itself. */
export async function findRepoRoot(cwd: string): Promise<string> {
  for (let dir = path.resolve(cwd); ; dir = path.dirname(dir)) {
    if (await exists(path.join(dir, ".git"))) return dir;
    if (path.dirname(dir) === dir) return path.resolve(cwd);
  }
}

/**
 * AGENTS.md files from the repository root down to `cwd`, outermost first, so instructions closer
 * to the work come last and win. Each is capped so a huge file cannot crowd out the conversation.
 */
export async function discoverAgentsFiles(
  cwd: string,
  options: { maxBytes?: number; onUnreadable?: (message: string) => void } = {},
): Promise<AgentsFile[]> {
  const maxBytes = options.maxBytes ?? 32 * 1024;
  const root = await findRepoRoot(cwd);
  const dirs: string[] = [];
  for (let dir = path.resolve(cwd); ; dir = path.dirname(dir)) {
    dirs.unshift(dir);
    if (dir === root || path.dirname(dir) === dir) break;
  }
  const files: AgentsFile[] = [];
  for (const dir of dirs) {
    const file = path.join(dir, "AGENTS.md");
    try {
      const content = await readFile(file, "utf8");
      files.push({
        path: file,
        content: content.length > maxBytes ? `${content.slice(0, maxBytes)}\n[truncated]` : content,
      });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // Absent is the usual case; anything else (unreadable, a directory) the person should know.
      if (code !== "ENOENT" && code !== "ENOTDIR")
        options.onUnreadable?.(
          `${file} was not read (${code ?? (error as Error).message}); its instructions are not used.`,
        );
    }
  }
  return files;
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}
