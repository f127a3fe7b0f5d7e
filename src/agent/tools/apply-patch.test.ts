import { execFileSync } from "node:child_process";
import { chmod, mkdtemp, readdir, rm, stat, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { applyPatchTool, PATCH_MAX_FILE_BYTES } from "./apply-patch.js";
import { type TempWorkspace, tempWorkspace } from "./test-support/temp-workspace.js";
import { runTool } from "./tool.js";

const patch = (...lines: string[]) => ["*** Begin Patch", ...lines, "*** End Patch"].join("\n");

function apply(t: TempWorkspace, text: string) {
  return runTool(applyPatchTool, JSON.stringify({ patch: text }), t.context());
}

const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );

const APP = [
  "import { listen } from './net';",
  "",
  "function start() {",
  "  const port = 8080;",
  "  listen(port);",
  "  log('ready');",
  "}",
  "",
].join("\n");

describe("apply_patch", () => {
  test("an update changes the file exactly as the patch says", async () => {
    await using t = await tempWorkspace({ files: { "src/app.ts": APP } });
    const result = await apply(
      t,
      patch(
        "*** Update File: src/app.ts",
        "@@ function start() {",
        "   const port = 8080;",
        "-  listen(port);",
        "+  listen(port, host);",
        "+  watch();",
        "   log('ready');",
      ),
    );
    expect(result).toMatchObject({ isError: false, output: "Updated src/app.ts (+2 -1)" });
    expect((await t.read("src/app.ts")).toString()).toBe(
      APP.replace("  listen(port);\n", "  listen(port, host);\n  watch();\n"),
    );
    expect(result.display).toMatchObject({
      kind: "diff",
      files: [{ path: "src/app.ts", kind: "update", added: 2, removed: 1 }],
    });
  });

  test("stale context is rejected, quoting the missing lines, and nothing changes", async () => {
    await using t = await tempWorkspace({ files: { "src/app.ts": APP } });
    const result = await apply(
      t,
      patch(
        "*** Update File: src/app.ts",
        "@@",
        "   const port = 9090;",
        "-  listen(port);",
        "+  listen(port, host);",
      ),
    );
    expect(result).toMatchObject({ isError: true, errorCode: "patch_rejected" });
    expect(result.output).toContain("src/app.ts");
    expect(result.output).toContain("    const port = 9090;");
    expect(result.output).toContain("Re-read src/app.ts");
    expect(result.output).toContain("no files were changed");
    expect((await t.read("src/app.ts")).toString()).toBe(APP);
    expect(t.journal.canUndo).toBe(false);
  });

  test("when a later file's hunk fails, earlier files of the patch stay untouched", async () => {
    await using t = await tempWorkspace({
      files: { "a.txt": "one\ntwo\nthree\n", "b.txt": "alpha\nbeta\n" },
    });
    const before = await t.read("a.txt");
    const result = await apply(
      t,
      patch(
        "*** Update File: a.txt",
        "@@",
        " one",
        "-two",
        "+TWO",
        "*** Add File: c.txt",
        "+new",
        "*** Delete File: b.txt",
        "*** Update File: b.txt.missing-context",
        "@@",
        "-gamma",
        "+GAMMA",
      ),
    );
    expect(result.isError).toBe(true);
    expect((await t.read("a.txt")).equals(before)).toBe(true);
    expect((await t.read("b.txt")).toString()).toBe("alpha\nbeta\n");
    expect(await exists(join(t.dir, "c.txt"))).toBe(false);

    const second = await apply(
      t,
      patch("*** Update File: a.txt", "-two", "+TWO", "*** Update File: b.txt", "@@", "-gamma", "+GAMMA"),
    );
    expect(second).toMatchObject({ isError: true, errorCode: "patch_rejected" });
    expect(second.output).toContain("hunk 1 of b.txt");
    expect(second.output).toContain("    gamma");
    expect((await t.read("a.txt")).equals(before)).toBe(true);
  });

  test("add, delete and move", async () => {
    await using t = await tempWorkspace({ files: { "old.ts": "gone\n", "from.ts": "a\nb\nc\n" } });
    const result = await apply(
      t,
      patch(
        "*** Add File: deep/new/file.ts",
        "+first",
        "+second",
        "*** Delete File: old.ts",
        "*** Update File: from.ts",
        "*** Move to: moved/to.ts",
        "@@",
        " a",
        "-b",
        "+B",
      ),
    );
    expect(result.output).toBe(
      [
        "Added deep/new/file.ts (+2 -0)",
        "Deleted old.ts (+0 -1)",
        "Moved from.ts to moved/to.ts (+1 -1)",
      ].join("\n"),
    );
    expect((await t.read("deep/new/file.ts")).toString()).toBe("first\nsecond\n");
    expect(await exists(join(t.dir, "old.ts"))).toBe(false);
    expect(await exists(join(t.dir, "from.ts"))).toBe(false);
    expect((await t.read("moved/to.ts")).toString()).toBe("a\nB\nc\n");
    expect(result.display).toMatchObject({
      files: [{ kind: "add" }, { kind: "delete" }, { kind: "move", from: "from.ts" }],
    });
  });

  test("refuses to clobber: Add File on an existing file, a move onto one, deleting a missing file", async () => {
    await using t = await tempWorkspace({ files: { "a.ts": "a\n", "b.ts": "b\n" } });
    expect(await apply(t, patch("*** Add File: a.ts", "+x"))).toMatchObject({ errorCode: "patch_rejected" });
    expect(await apply(t, patch("*** Update File: a.ts", "*** Move to: b.ts"))).toMatchObject({
      errorCode: "patch_rejected",
    });
    expect(await apply(t, patch("*** Delete File: nope.ts"))).toMatchObject({ errorCode: "not_found" });
    expect(
      await apply(t, patch("*** Update File: ./a.ts", "-a", "+A", "*** Delete File: a.ts")),
    ).toMatchObject({
      errorCode: "patch_rejected",
    });
    expect((await t.read("a.ts")).toString()).toBe("a\n");
    expect((await t.read("b.ts")).toString()).toBe("b\n");
  });

  test("CRLF files stay CRLF; a missing final newline stays missing", async () => {
    await using t = await tempWorkspace({
      files: { "win.txt": "one\r\ntwo\r\nthree\r\n", "bare.txt": "one\ntwo", "mixed.txt": "a\r\nb\nc\r\n" },
    });
    const result = await apply(
      t,
      patch(
        "*** Update File: win.txt",
        " one",
        "-two",
        "+2",
        "+2.5",
        "*** Update File: bare.txt",
        " one",
        " two",
        "+three",
        "*** Update File: mixed.txt",
        " b",
        "-c",
        "+C",
      ),
    );
    expect(result.isError).toBe(false);
    expect((await t.read("win.txt")).toString()).toBe("one\r\n2\r\n2.5\r\nthree\r\n");
    expect((await t.read("bare.txt")).toString()).toBe("one\ntwo\nthree");
    // Untouched lines keep their own endings; new lines take the file's majority ending.
    expect((await t.read("mixed.txt")).toString()).toBe("a\r\nb\nC\r\n");
  });

  test("the BOM and the file mode are kept", async () => {
    await using t = await tempWorkspace({ files: { "run.sh": "\uFEFF#!/bin/sh\necho hi\n" } });
    await chmod(join(t.dir, "run.sh"), 0o751);
    await apply(t, patch("*** Update File: run.sh", " #!/bin/sh", "-echo hi", "+echo hello"));
    expect((await t.read("run.sh")).toString()).toBe("\uFEFF#!/bin/sh\necho hello\n");
    expect((await stat(join(t.dir, "run.sh"))).mode & 0o777).toBe(0o751);
    expect((await readdir(t.dir)).filter((name) => name.includes(".tmp"))).toEqual([]);
  });

  test("context differing only in surrounding whitespace still applies, keeping the file's bytes", async () => {
    await using t = await tempWorkspace({ files: { "a.py": "def f():\n    x = 1   \n    return x\n" } });
    const result = await apply(
      t,
      patch("*** Update File: a.py", " def f():", "  x = 1", "-    return x", "+    return x + 1"),
    );
    expect(result.isError).toBe(false);
    expect((await t.read("a.py")).toString()).toBe("def f():\n    x = 1   \n    return x + 1\n");
  });

  test("ambiguous context is rejected; an @@ anchor places it", async () => {
    const source =
      "class A {\n  run() {\n    return 1;\n  }\n}\nclass B {\n  run() {\n    return 1;\n  }\n}\n";
    await using t = await tempWorkspace({ files: { "ab.ts": source } });
    const ambiguous = await apply(
      t,
      patch("*** Update File: ab.ts", "@@", "   run() {", "-    return 1;", "+    return 2;"),
    );
    expect(ambiguous).toMatchObject({ isError: true, errorCode: "patch_rejected" });
    expect(ambiguous.output).toContain("matches 2 places (lines 2, 7)");
    expect((await t.read("ab.ts")).toString()).toBe(source);

    const anchored = await apply(
      t,
      patch("*** Update File: ab.ts", "@@ class B {", "   run() {", "-    return 1;", "+    return 2;"),
    );
    expect(anchored.isError).toBe(false);
    expect((await t.read("ab.ts")).toString()).toBe(
      source.replace(/return 1;(?![\s\S]*return 1;)/, "return 2;"),
    );
  });

  test("hunks apply in order; pure additions go after their anchor or at the end", async () => {
    await using t = await tempWorkspace({ files: { "list.txt": "a\nx\nb\nx\nc\n" } });
    const result = await apply(
      t,
      patch("*** Update File: list.txt", "@@ a", "+after a", "@@", " b", "-x", "+y", "@@", "+at end"),
    );
    expect(result.isError).toBe(false);
    expect((await t.read("list.txt")).toString()).toBe("a\nafter a\nx\nb\ny\nc\nat end\n");
  });

  test("undo restores every file of the patch byte for byte", async () => {
    const files = { "keep.txt": "1\r\n2\r\n3", "doomed.bin.txt": "bye\n", "mv.txt": "m\n" };
    await using t = await tempWorkspace({ files });
    await apply(
      t,
      patch(
        "*** Update File: keep.txt",
        " 1",
        "-2",
        "+two",
        "*** Delete File: doomed.bin.txt",
        "*** Add File: brand/new.txt",
        "+hello",
        "*** Update File: mv.txt",
        "*** Move to: moved.txt",
      ),
    );
    expect(t.journal.size).toBe(1);
    const { paths } = await t.journal.undo();
    expect(paths).toHaveLength(5);
    for (const [path, content] of Object.entries(files))
      expect((await t.read(path)).toString()).toBe(content);
    expect(await exists(join(t.dir, "brand/new.txt"))).toBe(false);
    expect(await exists(join(t.dir, "moved.txt"))).toBe(false);
  });

  test("paths that escape the workspace are refused and nothing is written outside", async () => {
    const outside = await mkdtemp(join(tmpdir(), "spark-outside-"));
    try {
      await using t = await tempWorkspace({ files: { "ok.txt": "ok\n" } });
      await symlink(outside, join(t.dir, "escape"));
      for (const path of ["../x.txt", "/etc/passwd", "escape/x.txt"]) {
        const result = await apply(
          t,
          patch("*** Update File: ok.txt", "-ok", "+changed", `*** Add File: ${path}`, "+x"),
        );
        expect(result).toMatchObject({ isError: true, errorCode: "path_outside_workspace" });
      }
      expect(await readdir(outside)).toEqual([]);
      expect((await t.read("ok.txt")).toString()).toBe("ok\n");
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  test("binary files and bad patches get errors the model can act on", async () => {
    await using t = await tempWorkspace({ files: { "img.png": Buffer.from([0x89, 0x50, 0, 1, 2]) } });
    expect(await apply(t, patch("*** Update File: img.png", "-x", "+y"))).toMatchObject({
      errorCode: "not_allowed",
    });
    const bad = await apply(t, "*** Update File: a\n-x\n+y\n");
    expect(bad).toMatchObject({ isError: true, errorCode: "invalid_arguments" });
    expect(bad.output).toContain("line 1");
  });

  test("a file over the size cap is refused without being read whole; a FIFO is not waited on", async () => {
    await using t = await tempWorkspace({
      files: { "big.txt": Buffer.alloc(PATCH_MAX_FILE_BYTES + 1, "x\n") },
    });
    const big = await apply(t, patch("*** Update File: big.txt", "-x", "+y"));
    expect(big).toMatchObject({ isError: true, errorCode: "not_allowed" });
    expect(big.output).toContain("over apply_patch's 8 MiB limit");
    if (process.platform === "win32") return;
    execFileSync("mkfifo", [join(t.dir, "pipe")]);
    const fifo = await apply(t, patch("*** Update File: pipe", "-x", "+y"));
    expect(fifo).toMatchObject({ isError: true, errorCode: "invalid_arguments" });
    expect(fifo.output).toContain("not a regular file");
    expect(t.journal.size).toBe(0);
  });
});
