import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import type { ResolvedConfig } from "../config/spark-config.js";
import type { GenerateRequest } from "../engine/engine.js";
import type { ScriptedReply } from "../engine/scripted/scripted-engine.js";
import { AgentRuntime } from "./agent-runtime.js";
import { scriptedTiers } from "./test-support/scripted-tiers.js";

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

const lastUser = (request: GenerateRequest) =>
  [...request.messages].reverse().find((m) => m.role === "user")?.content ?? "";

async function write(root: string, files: Record<string, string>): Promise<void> {
  for (const [name, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, name)), { recursive: true });
    await writeFile(path.join(root, name), text);
  }
}

/** A repository with a skill, a broken skill and an agent; a user folder with a skill of its own. */
async function workspace() {
  const repo = await mkdtemp(path.join(os.tmpdir(), "spark-skills-repo-"));
  execFileSync("git", ["init", "-q"], { cwd: repo });
  await write(repo, {
    ".agents/skills/pdf/SKILL.md":
      "---\nname: pdf\ndescription: Fill PDF forms.\n---\nUse pdftk to fill forms.\n",
    ".agents/skills/broken/SKILL.md": "no frontmatter\n",
    ".agents/agents/reviewer.md":
      "---\nname: reviewer\ndescription: Reviews code.\ntools: [read_file]\n---\nReview; change nothing.\n",
  });
  const userDir = await mkdtemp(path.join(os.tmpdir(), "spark-skills-user-"));
  await write(userDir, { "skills/notes/SKILL.md": "---\nname: notes\ndescription: My notes.\n---\nMine.\n" });
  return { repo, userDir };
}

const config: ResolvedConfig = {
  defaultTier: "fast",
  delegateTier: null,
  tiers: { fast: { engine: "llama" } },
  sources: [],
};

async function start(
  where: { repo: string; userDir: string },
  script: (r: GenerateRequest) => ScriptedReply,
) {
  const notices: string[] = [];
  const runtime = await AgentRuntime.start({
    cwd: where.repo,
    userDir: where.userDir,
    config,
    loadTier: scriptedTiers({ fast: { script } }),
    prewarm: false,
    sessionsDir: path.join(where.repo, ".sessions"),
    onNotice: (line) => notices.push(line),
  });
  cleanup.push(() => runtime.dispose());
  return { runtime, notices };
}

describe("a session's skills and defined agents", () => {
  test("are read at start: the prompt lists them byte for byte the same each time; a broken one is said", async () => {
    const where = await workspace();
    const a = await start(where, () => ({ text: "ok" }));
    const b = await start(where, () => ({ text: "ok" }));
    expect(a.runtime.instructions).toBe(b.runtime.instructions);
    expect(a.runtime.instructions).toContain("- notes: My notes.\n- pdf: Fill PDF forms.");
    expect(a.runtime.instructions).toContain("- reviewer: Reviews code.");
    expect(a.runtime.instructions).not.toContain("pdftk");
    expect(a.notices).toEqual([
      `${path.join(".agents", "skills", "broken", "SKILL.md")} is not used: it does not start with a --- line (YAML frontmatter).`,
    ]);
    await write(where.repo, {
      ".agents/skills/pdf/SKILL.md":
        "---\nname: pdf\ndescription: Fill and sign PDF forms.\n---\nUse pdftk.\n",
    });
    const c = await start(where, () => ({ text: "ok" }));
    expect(c.runtime.instructions).not.toBe(a.runtime.instructions);
    expect(c.runtime.instructions).toContain("- pdf: Fill and sign PDF forms.");
  });

  test("the model loads a skill, and delegates to a defined agent without a delegate tier", async () => {
    const where = await workspace();
    const offered = new Map<string, string[]>();
    const script = (request: GenerateRequest): ScriptedReply => {
      const user = lastUser(request);
      const last = request.messages.at(-1);
      offered.set(
        user.split("\n")[0]!,
        (request.tools ?? []).map((tool) => tool.name),
      );
      if (user.startsWith("fill the form")) {
        return last?.role === "tool"
          ? { text: `Loaded: ${last.content}` }
          : { toolCalls: [{ name: "load_skill", arguments: JSON.stringify({ name: "pdf" }) }] };
      }
      if (user === "review main.ts") return { text: "Looks fine." };
      if (user.startsWith("Result of sub-agent")) return { text: "Noted." };
      if (last?.role === "tool") return { text: "Asked the reviewer." };
      return {
        toolCalls: [
          { name: "delegate", arguments: JSON.stringify({ task: "review main.ts", agent: "reviewer" }) },
        ],
      };
    };
    const { runtime } = await start(where, script);
    const { thread } = await runtime.newThread();
    // Plan mode runs it too: loading a skill changes nothing.
    await thread.startTurn("fill the form", { mode: "plan" });
    expect(thread.history.at(-1)).toMatchObject({
      type: "agent_message",
      text: `Loaded: [Skill pdf, from ${path.join(".agents", "skills", "pdf", "SKILL.md")}]\nUse pdftk to fill forms.`,
    });
    await thread.startTurn("get it reviewed", { mode: "default" });
    await thread.whenSettled();
    expect(thread.subAgents).toEqual([
      expect.objectContaining({ task: "review main.ts", model: "fast", status: "completed" }),
    ]);
    expect(offered.get("fill the form")).toEqual([
      "read_file",
      "list_dir",
      "search",
      "apply_patch",
      "shell",
      "load_skill",
      "delegate",
    ]);
    expect(offered.get("review main.ts")).toEqual(["read_file"]);
    expect(thread.history.at(-1)).toMatchObject({ type: "agent_message", text: "Noted." });
  });
});
