import { mkdir, mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { tempWorkspace } from "./tools/test-support/temp-workspace.js";
import { ToolError } from "./tools/tool-error.js";
import { Workspace } from "./workspace.js";

async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ToolError);
  return (error as ToolError).code;
}

describe("Workspace.resolve", () => {
  let outside: string;
  beforeAll(async () => {
    outside = await mkdtemp(join(tmpdir(), "spark-outside-"));
  });
  afterAll(async () => {
    await rm(outside, { recursive: true, force: true });
  });

  test("accepts relative paths, absolute paths inside, and missing files", async () => {
    await using t = await tempWorkspace({ files: { "src/a.ts": "a" } });
    expect(await t.workspace.resolve("src/a.ts")).toBe(join(t.dir, "src/a.ts"));
    expect(await t.workspace.resolve(join(t.dir, "src/a.ts"))).toBe(join(t.dir, "src/a.ts"));
    expect(await t.workspace.resolve("./src/../src/a.ts")).toBe(join(t.dir, "src/a.ts"));
    expect(await t.workspace.resolve("new/dir/file.ts")).toBe(join(t.dir, "new/dir/file.ts"));
    expect(await t.workspace.resolve(".")).toBe(t.dir);
  });

  test("refuses .. escapes and absolute paths outside", async () => {
    await using t = await tempWorkspace();
    expect(await refusal(t.workspace.resolve("../x"))).toBe("path_outside_workspace");
    expect(await refusal(t.workspace.resolve("a/../../x"))).toBe("path_outside_workspace");
    expect(await refusal(t.workspace.resolve("/etc/passwd"))).toBe("path_outside_workspace");
    expect(await refusal(t.workspace.resolve(`${t.dir}-sibling/x`))).toBe("path_outside_workspace");
    expect(await refusal(t.workspace.resolve("a\0b"))).toBe("invalid_arguments");
  });

  test("refuses symlinks whose target is outside, wherever they are on the path", async () => {
    await using t = await tempWorkspace();
    await symlink(join(outside, "secret.txt"), join(t.dir, "link-to-file"));
    await symlink(outside, join(t.dir, "link-to-dir"));
    await mkdir(join(t.dir, "nested"));
    await symlink(outside, join(t.dir, "nested", "deeper"));
    // The file link dangles: a write through it would create the file outside.
    expect(await refusal(t.workspace.resolve("link-to-file"))).toBe("path_outside_workspace");
    expect(await refusal(t.workspace.resolve("link-to-dir"))).toBe("path_outside_workspace");
    expect(await refusal(t.workspace.resolve("link-to-dir/new-file.ts"))).toBe("path_outside_workspace");
    expect(await refusal(t.workspace.resolve("link-to-dir/a/b/c.ts"))).toBe("path_outside_workspace");
    expect(await refusal(t.workspace.resolve("nested/deeper/x"))).toBe("path_outside_workspace");
  });

  test("follows symlinks that stay inside to their real path", async () => {
    await using t = await tempWorkspace({ files: { "real/a.ts": "a" } });
    await symlink(join(t.dir, "real"), join(t.dir, "alias"));
    await symlink("real/a.ts", join(t.dir, "a-link.ts"));
    await symlink("real/missing.ts", join(t.dir, "dangling.ts"));
    expect(await t.workspace.resolve("alias/a.ts")).toBe(join(t.dir, "real/a.ts"));
    expect(await t.workspace.resolve("a-link.ts")).toBe(join(t.dir, "real/a.ts"));
    expect(await t.workspace.resolve("dangling.ts")).toBe(join(t.dir, "real/missing.ts"));
    expect(await t.workspace.resolve("alias/new.ts")).toBe(join(t.dir, "real/new.ts"));
  });

  test("a symlink loop is an error, not a hang", async () => {
    await using t = await tempWorkspace();
    await symlink("loop-b", join(t.dir, "loop-a"));
    await symlink("loop-a", join(t.dir, "loop-b"));
    expect(await refusal(t.workspace.resolve("loop-a"))).toBe("failed");
  });

  test("a root given through a symlink is its real path; absolute paths under either form work", async () => {
    await using t = await tempWorkspace({ files: { "a.ts": "a" } });
    const alias = join(outside, "alias-root");
    await symlink(t.dir, alias);
    const workspace = new Workspace(alias);
    expect(workspace.root).toBe(t.dir);
    expect(await workspace.resolve(join(alias, "a.ts"))).toBe(join(t.dir, "a.ts"));
    expect(await workspace.resolve(join(t.dir, "a.ts"))).toBe(join(t.dir, "a.ts"));
    expect(await refusal(workspace.resolve(join(alias, "..", "x")))).toBe("path_outside_workspace");
  });

  test("refuses .git and .spark at any depth, in every spelling a filesystem may open as one", async () => {
    await using t = await tempWorkspace({
      git: true,
      files: { "vendor/lib/.git/config": "", ".spark/config.toml": "" },
    });
    for (const path of [
      ".git",
      ".git/hooks/pre-commit",
      ".git/config",
      "./src/../.git/config",
      join(t.dir, ".git/config"),
      ".spark/config.toml",
      "vendor/lib/.git/config",
      "new/nested/.git/hooks/post-checkout",
      ".GIT/config",
      ".Spark/config.toml",
      ".git./config",
      ".git /config",
      ".g\u200cit/config",
      "GIT~1/config",
    ]) {
      expect({ path, code: await refusal(t.workspace.resolve(path)) }).toEqual({
        path,
        code: "path_protected",
      });
    }
  });

  test("names that only resemble .git or .spark are ordinary paths", async () => {
    await using t = await tempWorkspace();
    for (const path of [
      ".gitignore",
      ".github/workflows/ci.yml",
      "my.git/x",
      ".sparkrc",
      "git/x",
      ".gitmodules",
    ]) {
      expect(await t.workspace.resolve(path)).toBe(join(t.dir, path));
    }
  });

  test("refuses symlinks that lead into .git, existing or dangling, however they are named", async () => {
    await using t = await tempWorkspace({ git: true });
    await symlink(join(t.dir, ".git", "hooks"), join(t.dir, "hooks"));
    await symlink(".git/config", join(t.dir, "config-link"));
    await symlink(".git/hooks/pre-commit", join(t.dir, "dangling-hook"));
    await mkdir(join(t.dir, "nested"));
    await symlink("..", join(t.dir, "nested", "up"));
    expect(await refusal(t.workspace.resolve("hooks"))).toBe("path_protected");
    expect(await refusal(t.workspace.resolve("hooks/pre-commit"))).toBe("path_protected");
    expect(await refusal(t.workspace.resolve("config-link"))).toBe("path_protected");
    expect(await refusal(t.workspace.resolve("dangling-hook"))).toBe("path_protected");
    expect(await refusal(t.workspace.resolve("nested/up/.git/config"))).toBe("path_protected");
  });

  test("relative() gives slash-separated paths from the root", async () => {
    await using t = await tempWorkspace();
    expect(t.workspace.relative(join(t.dir, "src", "a.ts"))).toBe("src/a.ts");
    expect(t.workspace.relative(t.dir)).toBe(".");
  });
});
