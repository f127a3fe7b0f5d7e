import { execFileSync } from "node:child_process";
import { symlink } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { createSearchTool, SEARCH_MAX_FILE_BYTES, searchTool } from "./search.js";
import { SLOW_PATTERN, slowLine } from "./test-support/slow-regex.js";
import { tempWorkspace } from "./test-support/temp-workspace.js";
import { runTool } from "./tool.js";

const files = {
  ".gitignore": "dist/\n",
  "src/a.ts": "const needle = 1;\nconst other = 2;\r\nexport { needle };\n",
  "src/b.ts": "// no match here\n",
  "dist/a.js": "const needle = 1;\n",
  "node_modules/x/index.js": "needle\n",
  "logo.png": Buffer.concat([Buffer.from("needle"), Buffer.from([0, 1, 2])]),
};

describe("search", () => {
  test("finds text in a git repository, respecting .gitignore and skipping binaries", async () => {
    await using t = await tempWorkspace({ git: true, files });
    const result = await runTool(searchTool, '{"pattern":"needle"}', t.context());
    expect(result.output).toBe("src/a.ts:1: const needle = 1;\nsrc/a.ts:3: export { needle };");
  });

  test("outside git: walks the tree, skipping .git and node_modules", async () => {
    await using t = await tempWorkspace({ files: { ...files, ".git/HEAD": "needle" } });
    const result = await runTool(searchTool, '{"pattern":"needle"}', t.context());
    expect(result.output.split("\n")).toEqual([
      "dist/a.js:1: const needle = 1;",
      "src/a.ts:1: const needle = 1;",
      "src/a.ts:3: export { needle };",
    ]);
  });

  test("regex, a path, max_results and no matches", async () => {
    await using t = await tempWorkspace({ git: true, files });
    const run = (args: object) => runTool(searchTool, JSON.stringify(args), t.context());
    expect((await run({ pattern: "const \\w+ = 2;$", regex: true })).output).toBe(
      "src/a.ts:2: const other = 2;",
    );
    expect((await run({ pattern: "const", path: "src/a.ts" })).output.split("\n")).toHaveLength(2);
    const capped = await run({ pattern: "e", max_results: 1 });
    expect(capped.output.split("\n")[0]).toBe("src/a.ts:1: const needle = 1;");
    expect(capped.output).toContain("Stopped after 1 match;");
    const none = await run({ pattern: "const \\w+", path: "src/b.ts" });
    expect(none).toMatchObject({ isError: false, output: 'No matches for text "const \\\\w+" in src/b.ts.' });
  });

  test("an invalid regex is a clear error", async () => {
    await using t = await tempWorkspace({ files });
    const result = await runTool(searchTool, '{"pattern":"foo(","regex":true}', t.context());
    expect(result).toMatchObject({ isError: true, errorCode: "invalid_arguments" });
    expect(result.output).toContain("Invalid regular expression");
    expect(result.output).toContain("regex: false");
  });

  test("long lines are cut around the match; symlinks are not followed", async () => {
    await using t = await tempWorkspace({
      files: { "long.txt": `${"a".repeat(1000)}needle${"b".repeat(1000)}\n` },
    });
    await symlink("/etc/hostname", join(t.dir, "link"));
    const result = await runTool(searchTool, '{"pattern":"needle"}', t.context());
    const text = result.output.slice("long.txt:1: ".length);
    expect(text).toContain("needle");
    expect(text.length).toBeLessThanOrEqual(302);
    expect(result.output.split("\n")).toHaveLength(1);
  });

  test("a catastrophic-backtracking regex over a small file answers correctly (RE2, linear time)", async () => {
    await using t = await tempWorkspace({ files: { "evil.txt": `${"a".repeat(40)}!`, "ok.txt": "aaa\n" } });
    const result = await runTool(searchTool, JSON.stringify({ pattern: "(a+)+$", regex: true }), t.context());
    expect(result).toEqual({ isError: false, output: "ok.txt:1: aaa" });
  });

  test("regex syntax RE2 lacks is an error that says what to do", async () => {
    await using t = await tempWorkspace({ files });
    const result = await runTool(
      searchTool,
      JSON.stringify({ pattern: "(\\w)\\1", regex: true }),
      t.context(),
    );
    expect(result).toMatchObject({ isError: true, errorCode: "invalid_arguments" });
    expect(result.output).toContain("no backreferences");
  });

  test("a search that outlasts its time budget returns the matches found so far", async () => {
    await using t = await tempWorkspace({
      files: { "a.txt": "needle a\n", "b.txt": `${slowLine()}\n` },
    });
    const tool = createSearchTool({ timeBudgetMs: 1000 });
    const result = await runTool(
      tool,
      JSON.stringify({ pattern: `needle|${SLOW_PATTERN}`, regex: true }),
      t.context(),
    );
    expect(result.isError).toBe(false);
    expect(result.output.split("\n")).toEqual([
      "a.txt:1: needle a",
      "[Stopped after the 1 s time budget; the matches above are those found so far. Narrow the path or the pattern.]",
    ]);
  });

  test("aborting stops a search mid-match", async () => {
    await using t = await tempWorkspace({ files: { "slow.txt": slowLine() } });
    const controller = new AbortController();
    const search = searchTool.run(
      { pattern: SLOW_PATTERN, regex: true, max_results: 10 },
      t.context({ signal: controller.signal }),
    );
    controller.abort(new Error("interrupted"));
    await expect(search).rejects.toThrow("interrupted");
  });

  test("files over the size cap are skipped unread, with a note", async () => {
    await using t = await tempWorkspace({
      files: { "big.txt": Buffer.alloc(SEARCH_MAX_FILE_BYTES + 1, "needle\n"), "small.txt": "needle\n" },
    });
    const result = await runTool(searchTool, '{"pattern":"needle"}', t.context());
    expect(result.output).toBe("small.txt:1: needle\n[Skipped 1 file(s) over 8 MiB.]");
  });

  test.skipIf(process.platform === "win32")("a FIFO in the tree is skipped, not waited on", async () => {
    await using t = await tempWorkspace({ files: { "a.txt": "needle\n" } });
    execFileSync("mkfifo", [join(t.dir, "pipe")]);
    const result = await runTool(searchTool, '{"pattern":"needle"}', t.context());
    expect(result.output).toBe("a.txt:1: needle");
  });

  test("patterns are at most 1000 characters", async () => {
    await using t = await tempWorkspace({ files });
    const result = await runTool(searchTool, JSON.stringify({ pattern: "x".repeat(1001) }), t.context());
    expect(result).toMatchObject({ isError: true, errorCode: "invalid_arguments" });
  });
});
