import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fuzzyScore, rankFiles } from "./fuzzy-file-rank.js";

const FILES = [
  "src/parser.ts",
  "src/protocol/agent.ts",
  "docs/parsing-notes.md",
  "src/cli/tui/prompt-box.ts",
  "package.json",
  "README.md",
];

function isSubsequence(path: string, query: string): boolean {
  let from = 0;
  for (const char of query.toLowerCase()) {
    const at = path.toLowerCase().indexOf(char, from);
    if (at === -1) return false;
    from = at + 1;
  }
  return true;
}

describe("rankFiles", () => {
  it("puts the file whose name holds the query first", () => {
    expect(rankFiles(FILES, "par")[0]).toBe("src/parser.ts");
    expect(rankFiles(FILES, "pbox")).toEqual(["src/cli/tui/prompt-box.ts"]);
  });

  it("matches at the segments the query names, not at the first letters that fit", () => {
    const files = ["packages/pkg17/src/module217/file-217.ts", "packages/pkg7/src/module12/file-12.ts"];
    expect(rankFiles(files, "pkg7mod12")[0]).toBe("packages/pkg7/src/module12/file-12.ts");
    // A jump to a word start that leaves no room for the rest still matches (leftmost).
    expect(fuzzyScore("a-b/xab", "ab")).not.toBeNull();
    expect(fuzzyScore("xa_ya", "aa")).not.toBeNull();
  });

  it("is case-insensitive and leaves out files that do not match", () => {
    expect(rankFiles(FILES, "README")).toEqual(["README.md"]);
    expect(rankFiles(FILES, "zzz")).toEqual([]);
    expect(fuzzyScore("src/a.ts", "b")).toBeNull();
  });

  it("lists at most `limit` files, shortest first for an empty query", () => {
    expect(rankFiles(FILES, "", 2)).toEqual(["README.md", "package.json"]);
    expect(rankFiles(FILES, "", 0)).toEqual([]);
  });

  it("property: only files holding the query as a subsequence are listed, never more than the limit, and every match is listed before a non-match", () => {
    const segment = fc.stringMatching(/^[a-zA-Z._-]{1,8}$/);
    const path = fc.array(segment, { minLength: 1, maxLength: 4 }).map((parts) => parts.join("/"));
    fc.assert(
      fc.property(
        fc.uniqueArray(path, { maxLength: 40 }),
        fc.stringMatching(/^[a-zA-Z.]{0,4}$/),
        fc.integer({ min: 0, max: 12 }),
        (files, query, limit) => {
          const ranked = rankFiles(files, query, limit);
          const matching = files.filter((file) => isSubsequence(file, query));
          expect(ranked.length).toBe(Math.min(limit, matching.length));
          for (const file of ranked) expect(isSubsequence(file, query)).toBe(true);
          // The whole ranking: every matching file before any other (here: others are left out).
          const all = rankFiles(files, query, files.length);
          expect(new Set(all)).toEqual(new Set(matching));
        },
      ),
    );
  });
});
