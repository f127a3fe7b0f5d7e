import { mkdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { loadCatalog } from "../definitions/catalog.js";
import { LOAD_SKILL_MAX_BYTES, loadSkillTool } from "./load-skill.js";
import { tempWorkspace } from "./test-support/temp-workspace.js";
import { runTool } from "./tool.js";

/** A repository with the skill `pdf` (and a secret beside it), the catalog read from it. */
async function skillRepo() {
  const ws = await tempWorkspace({
    git: true,
    files: {
      ".agents/skills/pdf/SKILL.md":
        "---\nname: pdf\ndescription: Work with PDF files.\n---\n# PDF\nRead reference.md for the API.\n",
      ".agents/skills/pdf/reference.md": "The API: extract(page).\n",
      ".agents/skills/pdf/scripts/fill.py": "print('fill')\n",
      ".agents/skills/pdf/big.txt": "x".repeat(LOAD_SKILL_MAX_BYTES + 1),
      ".agents/skills/pdf/logo.png": Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0]),
      "secret.txt": "TOP SECRET\n",
    },
  });
  const catalog = await loadCatalog({ repoRoot: ws.dir, userDir: null });
  expect(catalog.problems).toEqual([]);
  const load = (args: Record<string, unknown>) =>
    runTool(loadSkillTool, JSON.stringify(args), ws.context({ skills: catalog.skills }));
  return { ws, load };
}

describe("load_skill", () => {
  test("loads the instructions without the frontmatter, with the folder's files listed", async () => {
    const { ws, load } = await skillRepo();
    await using _ = ws;
    const result = await load({ name: "pdf" });
    expect(result.isError).toBe(false);
    expect(result.output).toBe(
      `[Skill pdf, from ${path.join(".agents", "skills", "pdf", "SKILL.md")}]\n# PDF\nRead reference.md for the API.\n\n` +
        "[Files in the skill's folder (load one with load_skill and file): big.txt, logo.png, reference.md, scripts/fill.py]",
    );
    expect(await load({ name: "pdf", file: "reference.md" })).toEqual({
      output: "[pdf/reference.md]\nThe API: extract(page).\n",
      isError: false,
    });
    expect((await load({ name: "pdf", file: "scripts/fill.py" })).output).toContain("print('fill')");
  });

  test("reads only inside the skill's folder: no '..', no absolute path, no symlink out", async () => {
    const { ws, load } = await skillRepo();
    await using _ = ws;
    for (const file of [
      "../../../secret.txt",
      "scripts/../../../../secret.txt",
      path.join(ws.dir, "secret.txt"),
    ]) {
      const result = await load({ name: "pdf", file });
      expect(result).toMatchObject({ isError: true, errorCode: "invalid_arguments" });
      expect(result.output).not.toContain("TOP SECRET");
    }
    await symlink(path.join(ws.dir, "secret.txt"), path.join(ws.dir, ".agents/skills/pdf/link.md"));
    await symlink(ws.dir, path.join(ws.dir, ".agents/skills/pdf/up"));
    for (const file of ["link.md", "up/secret.txt"]) {
      const result = await load({ name: "pdf", file });
      expect(result).toMatchObject({ isError: true, errorCode: "path_outside_workspace" });
      expect(result.output).not.toContain("TOP SECRET");
    }
    await mkdir(path.join(ws.dir, ".agents/skills/pdf/.git"));
    await writeFile(path.join(ws.dir, ".agents/skills/pdf/.git/config"), "[credential]\n");
    expect(await load({ name: "pdf", file: ".git/config" })).toMatchObject({ errorCode: "path_protected" });
  });

  test("refuses files past its byte bound, binary files and unknown names", async () => {
    const { ws, load } = await skillRepo();
    await using _ = ws;
    const big = await load({ name: "pdf", file: "big.txt" });
    expect(big).toMatchObject({ isError: true, errorCode: "not_allowed" });
    expect(big.output).toContain(`at most ${LOAD_SKILL_MAX_BYTES} bytes`);
    expect(await load({ name: "pdf", file: "logo.png" })).toMatchObject({ errorCode: "not_allowed" });
    expect(await load({ name: "pdf", file: "missing.md" })).toMatchObject({ errorCode: "not_found" });
    const unknown = await load({ name: "docx" });
    expect(unknown).toMatchObject({ isError: true, errorCode: "not_found" });
    expect(unknown.output).toBe("No skill 'docx'. The skills: pdf.");
  });

  test("is read-only, so plan mode runs it", () => {
    expect(loadSkillTool.readOnly).toBe(true);
  });
});
