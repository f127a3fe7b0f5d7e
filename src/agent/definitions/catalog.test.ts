import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { buildSystemPrompt } from "../system-prompt.js";
import { applyPatchTool } from "../tools/apply-patch.js";
import { delegateTool } from "../tools/delegate.js";
import { readFileTool } from "../tools/read-file.js";
import { shellTool } from "../tools/shell.js";
import { type AgentDefinition, agentRun } from "./agent-definitions.js";
import { loadCatalog } from "./catalog.js";
import { SKILL_FILE_MAX_BYTES, SKILLS_PROMPT_MAX_BYTES } from "./skills.js";

const skillMd = (name: string, description: string, body = "Do it well.") =>
  `---\nname: ${name}\ndescription: ${description}\n---\n${body}\n`;

async function tree(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-catalog-"));
  for (const [name, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(path.join(dir, name), content);
  }
  return dir;
}

/** A repository and a user config folder with `files` under each. */
async function places(repoFiles: Record<string, string>, userFiles: Record<string, string> = {}) {
  const repoRoot = await tree(repoFiles);
  execFileSync("git", ["init", "-q"], { cwd: repoRoot });
  const userDir = await tree(userFiles);
  return { repoRoot, userDir };
}

describe("skills", () => {
  test("come from the user's folder and the repository, sorted by name; the user's wins a name", async () => {
    const where = await places(
      {
        ".agents/skills/zebra/SKILL.md": skillMd("zebra", "Stripes."),
        ".agents/skills/deploy/SKILL.md": skillMd("deploy", "The repository's deploy."),
        ".agents/skills/windows/SKILL.md":
          "\uFEFF---\r\nname: windows\r\ndescription: CRLF lines.\r\n---\r\nBody.\r\n",
      },
      {
        "skills/deploy/SKILL.md": skillMd("deploy", "My own deploy."),
        "skills/alpha/SKILL.md": skillMd("alpha", "First\n  of all,   folded."),
      },
    );
    const catalog = await loadCatalog(where);
    expect(catalog.skills.map((s) => [s.name, s.source, s.description])).toEqual([
      ["alpha", "user", "First of all, folded."],
      ["deploy", "user", "My own deploy."],
      ["windows", "project", "CRLF lines."],
      ["zebra", "project", "Stripes."],
    ]);
    expect(catalog.skills[3]!.file).toBe(path.join(".agents", "skills", "zebra", "SKILL.md"));
    expect(catalog.problems).toEqual([
      `${path.join(".agents", "skills", "deploy", "SKILL.md")} is not used: ${path.join(where.userDir, "skills", "deploy", "SKILL.md")} defines the skill 'deploy' already.`,
    ]);
  });

  test("invalid skills are reported, one line each, and the valid ones still load", async () => {
    const where = await places({
      ".agents/skills/good/SKILL.md": skillMd("good", "Fine."),
      ".agents/skills/Bad_Name/SKILL.md": skillMd("Bad_Name", "Upper case."),
      ".agents/skills/other/SKILL.md": skillMd("mismatch", "Not its folder."),
      ".agents/skills/plain/SKILL.md": "No frontmatter here.\n",
      ".agents/skills/broken/SKILL.md": "---\nname: broken\ndescription: [unclosed\n---\n",
      ".agents/skills/bomb/SKILL.md": "---\nname: bomb\na: &a [x, x]\nb: [*a, *a]\ndescription: y\n---\n",
      ".agents/skills/dup/SKILL.md": "---\nname: dup\nname: dup\ndescription: twice\n---\n",
      ".agents/skills/long/SKILL.md": skillMd("long", "x".repeat(1025)),
      ".agents/skills/huge/SKILL.md": skillMd("huge", "Big.", "y".repeat(SKILL_FILE_MAX_BYTES)),
      ".agents/skills/empty/README.md": "no SKILL.md\n",
      ".agents/skills/open/SKILL.md": "---\nname: open\ndescription: never closed\n",
    });
    const catalog = await loadCatalog({ ...where, userDir: null });
    expect(catalog.skills.map((s) => s.name)).toEqual(["good"]);
    const why = (folder: string) =>
      catalog.problems.find((p) => p.startsWith(path.join(".agents", "skills", folder, "SKILL.md")));
    expect(why("Bad_Name")).toMatch(/name is not 1-64 lowercase/);
    expect(why("other")).toMatch(/name 'mismatch' is not its folder's name 'other'/);
    expect(why("plain")).toMatch(/does not start with a --- line/);
    expect(why("broken")).toMatch(/not valid YAML/);
    expect(why("bomb")).toMatch(/not valid YAML/);
    expect(why("dup")).toMatch(/not valid YAML/);
    expect(why("long")).toMatch(/description is not a text of 1-1024 characters/);
    expect(why("huge")).toMatch(new RegExp(`more than ${SKILL_FILE_MAX_BYTES}`));
    expect(why("empty")).toMatch(/has no SKILL.md/);
    expect(why("open")).toMatch(/no closing --- line/);
    expect(catalog.problems).toHaveLength(10);
  });

  test("a repository's skill may not lead out of it, nor into .git", async () => {
    const outside = await tree({ "secret/SKILL.md": skillMd("secret", "Outside."), id_rsa: "KEY" });
    const where = await places({ ".agents/skills/.keep": "" });
    await symlink(path.join(outside, "secret"), path.join(where.repoRoot, ".agents/skills/secret"));
    await writeFile(path.join(where.repoRoot, ".git", "SKILL.md"), skillMd("git", "In git."));
    await symlink(path.join(where.repoRoot, ".git"), path.join(where.repoRoot, ".agents/skills/git"));
    // The person's own skills may be links (to a checkout of them, say).
    await mkdir(path.join(where.userDir, "skills"));
    await symlink(path.join(outside, "secret"), path.join(where.userDir, "skills", "secret"));
    const catalog = await loadCatalog(where);
    expect(catalog.skills.map((s) => [s.name, s.source])).toEqual([["secret", "user"]]);
    expect(catalog.problems).toEqual([
      expect.stringMatching(/^\.agents\/skills\/git was not read: .*\.git/),
      expect.stringMatching(/^\.agents\/skills\/secret was not read: .*outside the workspace/),
    ]);
  });

  test("the prompt lists names and descriptions within a byte budget, in a stable order", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 40; i++) {
      const name = `skill-${String(i).padStart(2, "0")}`;
      files[`.agents/skills/${name}/SKILL.md`] = skillMd(name, "d".repeat(1000), "SECRET BODY");
    }
    const where = await places(files);
    const catalog = await loadCatalog({ ...where, userDir: null });
    const listed = catalog.skills.map((s) => s.name);
    expect(listed.length).toBeLessThan(40);
    expect(listed).toEqual([...listed].sort());
    expect(listed[0]).toBe("skill-00");
    expect(catalog.problems).toHaveLength(40 - listed.length);
    expect(catalog.problems[0]).toMatch(new RegExp(`pass ${SKILLS_PROMPT_MAX_BYTES} bytes`));
    const prompt = buildSystemPrompt(where.repoRoot, [], { skills: catalog.skills });
    expect(prompt).toContain("- skill-00: ddd");
    expect(prompt).not.toContain("SECRET BODY");
  });

  test("the system prompt is byte-identical while skills and agents are unchanged, and changes with them", async () => {
    const where = await places(
      {
        ".agents/skills/b-skill/SKILL.md": skillMd("b-skill", "Second."),
        ".agents/agents/reviewer.md": "---\nname: reviewer\ndescription: Reviews.\n---\nReview it.\n",
      },
      { "skills/a-skill/SKILL.md": skillMd("a-skill", "First.") },
    );
    const build = async () => {
      const catalog = await loadCatalog(where);
      return buildSystemPrompt(where.repoRoot, [], { skills: catalog.skills, agents: catalog.agents });
    };
    const first = await build();
    expect(await build()).toBe(first);
    expect(first).toContain("- a-skill: First.\n- b-skill: Second.");
    expect(first).toContain("- reviewer: Reviews.");
    // The body changed: the prompt did not (only names and descriptions are in it).
    await writeFile(
      path.join(where.repoRoot, ".agents/skills/b-skill/SKILL.md"),
      skillMd("b-skill", "Second.", "New body."),
    );
    expect(await build()).toBe(first);
    await writeFile(
      path.join(where.repoRoot, ".agents/skills/b-skill/SKILL.md"),
      skillMd("b-skill", "Changed."),
    );
    const changed = await build();
    expect(changed).not.toBe(first);
    expect(changed).toContain("- b-skill: Changed.");
  });
});

describe("agents people define", () => {
  const agent = (front: string, body = "You review code. Be strict.") => `---\n${front}\n---\n${body}\n`;

  test("are read with their tools and tier; invalid ones are reported", async () => {
    const where = await places(
      {
        ".agents/agents/reviewer.md": agent(
          "name: reviewer\ndescription: Reviews diffs.\ntools: [read_file, search]",
        ),
        ".agents/agents/fixer.md": agent(
          "name: fixer\ndescription: Fixes.\ntools: read_file, apply_patch\ntier: deep",
        ),
        ".agents/agents/bypass.md": agent("name: bypass\ndescription: x\npermissionMode: bypassPermissions"),
        ".agents/agents/approver.md": agent("name: approver\ndescription: x\napproval: auto"),
        ".agents/agents/nested.md": agent("name: nested\ndescription: x\ntools: [delegate]"),
        ".agents/agents/both.md": agent("name: both\ndescription: x\ntier: a\nmodel: b"),
        ".agents/agents/empty.md": agent("name: empty\ndescription: x", ""),
        ".agents/agents/notes.txt": "not an agent",
      },
      { "agents/reviewer.md": agent("name: reviewer\ndescription: My reviewer.\nmodel: fast\ncolor: blue") },
    );
    const catalog = await loadCatalog(where);
    expect(catalog.agents.map(({ name, source, tools, tier }) => ({ name, source, tools, tier }))).toEqual([
      { name: "fixer", source: "project", tools: ["read_file", "apply_patch"], tier: "deep" },
      { name: "reviewer", source: "user", tools: undefined, tier: "fast" },
    ]);
    expect(catalog.agents[1]!.instructions).toBe("You review code. Be strict.");
    const why = (file: string) =>
      catalog.problems.find((p) => p.startsWith(path.join(".agents", "agents", file)));
    expect(why("bypass.md")).toMatch(/sets 'permissionMode'.*approvals and the sandbox are the person's/);
    expect(why("approver.md")).toMatch(/sets 'approval'/);
    expect(why("nested.md")).toMatch(/lists delegate/);
    expect(why("both.md")).toMatch(/both tier and model/);
    expect(why("empty.md")).toMatch(/no instructions/);
    expect(why("reviewer.md")).toMatch(/defines the agent 'reviewer' already/);
    expect(catalog.problems).toHaveLength(6);
  });

  const parentTools = [readFileTool, applyPatchTool, shellTool, delegateTool];
  const base = (over: Partial<AgentDefinition>): AgentDefinition => ({
    name: "helper",
    description: "Helps.",
    source: "project",
    file: ".agents/agents/helper.md",
    instructions: "Help.",
    ...over,
  });

  test("get only the tools they list that the parent offers, never delegate", () => {
    const options = { instructions: "BASE", parentTools, delegateModel: "deep", tiers: ["fast", "deep"] };
    const listed = agentRun(base({ tools: ["read_file", "mcp__evil__run", "shell"] }), options);
    expect(listed.tools).toEqual(["read_file", "shell"]);
    expect(listed.model).toBe("deep");
    expect(listed.instructions).toBe(
      "BASE\n\nYou are the agent 'helper', started by another agent with a task. Instructions from .agents/agents/helper.md:\nHelp.",
    );
    expect(agentRun(base({}), options).tools).toEqual(["read_file", "apply_patch", "shell"]);
  });

  test("run on a tier of the session only; with a remote server only the person's may name a model", () => {
    const local = { instructions: "", parentTools, delegateModel: "deep", tiers: ["fast", "deep"] };
    expect(agentRun(base({ tier: "fast" }), local).model).toBe("fast");
    expect(() => agentRun(base({ tier: "hf:evil/model" }), local)).toThrow(
      /does not have \(its tiers: fast, deep\)/,
    );
    const remote = { ...local, delegateModel: "", tiers: [] };
    expect(() => agentRun(base({ tier: "gpt-expensive" }), remote)).toThrow(
      /a repository's agent may not choose the model/,
    );
    expect(agentRun(base({ tier: "gpt-expensive", source: "user" }), remote).model).toBe("gpt-expensive");
  });
});
