import { symlink } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { searchTool } from "./search.js";
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
});
