import { describe, expect, test } from "vitest";
import { applyPatchTool } from "./apply-patch.js";
import { LIST_MAX_ENTRIES, listDirTool } from "./list-dir.js";
import { tempWorkspace } from "./test-support/temp-workspace.js";
import { runTool } from "./tool.js";

const files = {
  ".gitignore": "dist/\n*.log\n",
  "package.json": "{}",
  "src/index.ts": "",
  "src/lib/deep/leaf.ts": "",
  "dist/bundle.js": "",
  "debug.log": "",
  "node_modules/pkg/index.js": "",
};

describe("list_dir", () => {
  test("in a git repository: an indented tree that respects .gitignore", async () => {
    await using t = await tempWorkspace({ git: true, files });
    const result = await runTool(listDirTool, "{}", t.context());
    expect(result.output).toBe(
      ["./", "  src/", "    lib/", "    index.ts", "  .gitignore", "  package.json"].join("\n"),
    );
  });

  test("tracked files show even under an ignored directory; deleted ones do not", async () => {
    await using t = await tempWorkspace({ git: true, files: { ...files, "gone.ts": "" } });
    t.git("add", "-f", "dist/bundle.js", "gone.ts");
    await runTool(
      applyPatchTool,
      JSON.stringify({ patch: "*** Begin Patch\n*** Delete File: gone.ts\n*** End Patch" }),
      t.context(),
    );
    const result = await runTool(listDirTool, '{"depth":1}', t.context());
    expect(result.output).toBe(["./", "  dist/", "  src/", "  .gitignore", "  package.json"].join("\n"));
  });

  test("depth and a subdirectory", async () => {
    await using t = await tempWorkspace({ git: true, files });
    const result = await runTool(listDirTool, '{"path":"src","depth":4}', t.context());
    expect(result.output).toBe(["src/", "  lib/", "    deep/", "      leaf.ts", "  index.ts"].join("\n"));
  });

  test("outside git: walks the tree, skipping .git and node_modules", async () => {
    await using t = await tempWorkspace({ files: { ...files, ".git/config": "", "empty/.keep": "" } });
    const result = await runTool(listDirTool, '{"depth":1}', t.context());
    expect(result.output).toBe(
      ["./", "  dist/", "  empty/", "  src/", "  .gitignore", "  debug.log", "  package.json"].join("\n"),
    );
  });

  test("caps the listing with a note", async () => {
    const many = Object.fromEntries(
      Array.from({ length: 1100 }, (_, i) => [`f${String(i).padStart(4, "0")}.txt`, ""]),
    );
    await using t = await tempWorkspace({ files: many });
    const lines = (await runTool(listDirTool, "{}", t.context())).output.split("\n");
    expect(lines).toHaveLength(LIST_MAX_ENTRIES + 2);
    expect(lines.at(-1)).toContain("Listing capped at 1000 entries");
  });

  test("a file lists its folder; errors: a missing path, out-of-range depth", async () => {
    await using t = await tempWorkspace({ files });
    // A file: its folder is listed, saying so (SmolLM2 listed src/app.ts when asked about src/).
    const file = await runTool(listDirTool, '{"path":"package.json"}', t.context());
    expect(file).toMatchObject({ isError: false });
    expect(file.output.split("\n").slice(0, 2)).toEqual([
      "package.json is a file (read it with read_file); its folder:",
      "./",
    ]);
    expect(file.output).toContain("  package.json");
    // The path quoted: "list_dir does not exist" read as if the tool were missing.
    expect(await runTool(listDirTool, '{"path":"list_dir"}', t.context())).toMatchObject({
      errorCode: "not_found",
      output: expect.stringMatching(/^No file or directory "list_dir" in the workspace\./),
    });
    expect(await runTool(listDirTool, '{"depth":9}', t.context())).toMatchObject({
      errorCode: "invalid_arguments",
    });
  });
});
