/** A file a diff changes: its path on the new side and the line ranges its hunks cover there. */
export interface DiffFile {
  /** Relative to the repository root, with `/` separators. */
  path: string;
  /** Inclusive 1-based line ranges of the new side (context lines included), in order. */
  ranges: Array<{ start: number; end: number }>;
}

const HUNK = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@/;

/**
 * The files of a unified diff (git's format) and the new-side ranges of their hunks. A deleted file
 * has no new side and is left out, as is a file whose hunks add no line (nothing to point at).
 */
export function parseUnifiedDiff(text: string): DiffFile[] {
  const files: DiffFile[] = [];
  let current: DiffFile | null = null;
  for (const line of text.split("\n")) {
    if (line.startsWith("diff --git ")) {
      current = null;
      continue;
    }
    if (line.startsWith("+++ ")) {
      const path = newPath(line.slice(4));
      current = path === null ? null : { path, ranges: [] };
      if (current) files.push(current);
      continue;
    }
    const hunk = current && HUNK.exec(line);
    if (current && hunk) {
      const start = Number(hunk[1]);
      const count = hunk[2] === undefined ? 1 : Number(hunk[2]);
      if (count > 0) current.ranges.push({ start, end: start + count - 1 });
    }
  }
  return files.filter((file) => file.ranges.length > 0);
}

/** The path of a `+++` line (`b/src/x.ts`), or null for `/dev/null`. */
function newPath(raw: string): string | null {
  let name = raw.replace(/\t.*$/, "");
  if (name === "/dev/null") return null;
  if (name.startsWith('"') && name.endsWith('"')) name = unquote(name.slice(1, -1));
  return name.startsWith("b/") ? name.slice(2) : name;
}

/** Git's C-style quoting of unusual names (`\t`, `\"`, `\\`, octal bytes). */
function unquote(quoted: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < quoted.length; i++) {
    const char = quoted[i]!;
    if (char !== "\\") {
      bytes.push(...Buffer.from(char, "utf8"));
      continue;
    }
    const next = quoted[++i] ?? "";
    if (/[0-7]/.test(next)) {
      bytes.push(Number.parseInt(quoted.slice(i, i + 3), 8));
      i += 2;
    } else {
      const escapes: Record<string, string> = {
        n: "\n",
        t: "\t",
        '"': '"',
        "\\": "\\",
        a: "\x07",
        b: "\b",
        f: "\f",
        r: "\r",
        v: "\v",
      };
      bytes.push(...Buffer.from(escapes[next] ?? next, "utf8"));
    }
  }
  return Buffer.from(bytes).toString("utf8");
}

/** Whether lines `start`..`end` of `path` lie inside one hunk of the diff. */
export function inDiff(files: readonly DiffFile[], path: string, start: number, end: number): boolean {
  const file = files.find((candidate) => candidate.path === path);
  return file?.ranges.some((range) => start >= range.start && end <= range.end) ?? false;
}
