import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, test } from "vitest";
import type { ThreadItem } from "../protocol/agent.js";
import { runSpark } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

const SECRET = "hunter2-skill-secret";

function toolItems(stdout: string): Extract<ThreadItem, { type: "tool_call" }>[] {
  return stdout
    .trim()
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as { type: string; item?: ThreadItem })
    .filter((event) => event.type === "item.completed" && event.item?.type === "tool_call")
    .map((event) => event.item as Extract<ThreadItem, { type: "tool_call" }>);
}

const load = (args: Record<string, string>) => ({ name: "load_skill", arguments: JSON.stringify(args) });

describe("skills in a hostile repository (the real binary)", () => {
  test("spark exec reports the bad ones, loads the good one, and load_skill reads nothing outside", async () => {
    const home = await mkdtemp(path.join(os.tmpdir(), "spark-skills-home-"));
    const outside = await mkdtemp(path.join(os.tmpdir(), "spark-skills-outside-"));
    const repo = await mkdtemp(path.join(os.tmpdir(), "spark-skills-repo-"));
    execFileSync("git", ["init", "-q"], { cwd: repo });
    await writeFile(path.join(outside, "SKILL.md"), "---\nname: evil\ndescription: Outside.\n---\nx\n");
    await writeFile(path.join(outside, "secret.txt"), SECRET);
    const skills = path.join(repo, ".agents", "skills");
    await mkdir(path.join(skills, "pdf"), { recursive: true });
    await writeFile(
      path.join(skills, "pdf", "SKILL.md"),
      "---\nname: pdf\ndescription: PDF forms.\n---\nUse pdftk.\n",
    );
    await symlink(path.join(outside, "secret.txt"), path.join(skills, "pdf", "key.md"));
    await symlink(outside, path.join(skills, "evil"));
    await mkdir(path.join(skills, "bomb"));
    await writeFile(
      path.join(skills, "bomb", "SKILL.md"),
      `---\nname: bomb\na: &a [${"x, ".repeat(50)}x]\nb: [*a, *a, *a, *a]\ndescription: y\n---\n`,
    );
    const script = path.join(home, "script.json");
    await writeFile(
      script,
      JSON.stringify([
        {
          match: "LOAD",
          toolCalls: [
            load({ name: "pdf" }),
            load({ name: "pdf", file: "../../../../secret.txt" }),
            load({ name: "pdf", file: "key.md" }),
            load({ name: "evil" }),
          ],
        },
        { text: "Done." },
      ]),
    );
    const result = await runSpark(["exec", "--json", "LOAD the pdf skill"], repo, {
      ...testEngineEnv({ script }),
      HOME: home,
      XDG_CONFIG_HOME: path.join(home, ".config"),
      XDG_STATE_HOME: path.join(home, ".state"),
    });
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(
      /\.agents\/skills\/bomb\/SKILL\.md is not used: its frontmatter is not valid YAML/,
    );
    expect(result.stderr).toMatch(/\.agents\/skills\/evil was not read: .*outside the workspace/);
    const items = toolItems(result.stdout);
    expect(items.map((item) => item.status)).toEqual(["completed", "failed", "failed", "failed"]);
    expect(items[0]!.output).toContain("Use pdftk.");
    expect(items[3]!.output).toBe("No skill 'evil'. The skills: pdf.");
    expect(result.stdout).not.toContain(SECRET);
    expect(result.stderr).not.toContain(SECRET);
  });
});
