import type { Dirent } from "node:fs";
import { readdir } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { parseFrontmatter } from "../definitions/frontmatter.js";
import { readSkillText, type Skill } from "../definitions/skills.js";
import { Workspace } from "../workspace.js";
import { looksBinary } from "./internal/binary.js";
import { readBounded } from "./internal/bounded-read.js";
import { parametersOf, type Tool, ToolError } from "./tool.js";

/** Bytes of a skill's file one call returns at most; a larger file is refused. */
export const LOAD_SKILL_MAX_BYTES = 256 * 1024;
/** Files of a skill's folder listed with its instructions, at most. */
const MAX_LISTED_FILES = 100;
/** Folder levels below the skill's listed. */
const MAX_LISTED_DEPTH = 4;

const schema = z.strictObject({
  name: z.string().min(1).max(64),
  file: z
    .string()
    .min(1)
    .max(1024)
    .optional()
    .describe("A file its instructions name, relative to the skill's folder. Default: SKILL.md."),
});

/**
 * Loads a skill's instructions (its SKILL.md without the frontmatter, with the files of its folder
 * listed), or one file of its folder. Reads only inside the skill's folder: `..`, absolute paths,
 * symlinks that lead out, and `.git` / `.spark` are refused; files are bounded in bytes. A skill
 * is text: what it says runs only through the other tools, with their approvals and sandbox.
 */
export const loadSkillTool: Tool<z.infer<typeof schema>> = {
  name: "load_skill",
  readOnly: true,
  description: "Load a listed skill's instructions, or a file of its folder.",
  parameters: parametersOf(schema),
  schema,
  async run(args, ctx) {
    const skills = ctx.skills ?? [];
    const skill = skills.find((candidate) => candidate.name === args.name);
    if (!skill) {
      throw new ToolError(
        "not_found",
        skills.length === 0
          ? "There are no skills in this session."
          : `No skill '${args.name}'. The skills: ${skills.map((s) => s.name).join(", ")}.`,
      );
    }
    if (args.file === undefined) return { output: await instructions(skill), isError: false };
    return { output: await skillFile(skill, args.file), isError: false };
  },
};

async function instructions(skill: Skill): Promise<string> {
  const text = await readSkillText(path.join(skill.dir, "SKILL.md"));
  if (typeof text !== "string")
    throw new ToolError("failed", `${skill.file} cannot be read now: ${text.problem}.`);
  const parsed = parseFrontmatter(text);
  if ("problem" in parsed)
    throw new ToolError("failed", `${skill.file} cannot be used now: ${parsed.problem}.`);
  const files = (await listFiles(skill.dir)).filter((file) => file !== "SKILL.md");
  const listing =
    files.length === 0
      ? ""
      : `\n\n[Files in the skill's folder (load one with load_skill and file): ${files.join(", ")}]`;
  return `[Skill ${skill.name}, from ${skill.file}]\n${parsed.body.trim()}${listing}`;
}

async function skillFile(skill: Skill, file: string): Promise<string> {
  if (path.isAbsolute(file) || file.split(/[\\/]/).includes(".."))
    throw new ToolError(
      "invalid_arguments",
      `${file}: give a path inside the skill's folder, relative to it, without '..'.`,
    );
  // The skill's folder as a workspace of its own: symlinks out of it, .git and .spark are refused.
  const real = await new Workspace(skill.dir).resolve(file);
  let read: Awaited<ReturnType<typeof readBounded>>;
  try {
    read = await readBounded(real, LOAD_SKILL_MAX_BYTES);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR")
      throw new ToolError("not_found", `The skill '${skill.name}' has no file ${file}.`, { cause: error });
    throw error;
  }
  if (read.kind === "not_file") throw new ToolError("invalid_arguments", `${file} is not a regular file.`);
  if (read.kind === "too_large")
    throw new ToolError(
      "not_allowed",
      `${file} is ${read.size} bytes; load_skill returns files of at most ${LOAD_SKILL_MAX_BYTES} bytes.`,
    );
  if (looksBinary(read.content.subarray(0, 8000)))
    throw new ToolError("not_allowed", `${file} is a binary file; load_skill returns text files only.`);
  return `[${skill.name}/${file}]\n${read.content.toString("utf8")}`;
}

/** The folder's files, relative to it, breadth first and bounded; dot entries and symlinks left out. */
async function listFiles(dir: string): Promise<string[]> {
  const files: string[] = [];
  let level = [""];
  for (let depth = 0; depth <= MAX_LISTED_DEPTH && level.length > 0; depth++) {
    const next: string[] = [];
    for (const folder of level) {
      let entries: Dirent[];
      try {
        entries = await readdir(path.join(dir, folder), { withFileTypes: true });
      } catch {
        continue;
      }
      entries.sort((a, b) => (a.name < b.name ? -1 : 1));
      for (const entry of entries) {
        if (entry.name.startsWith(".")) continue;
        const relative = folder === "" ? entry.name : `${folder}/${entry.name}`;
        if (entry.isDirectory()) next.push(relative);
        else if (entry.isFile()) {
          if (files.length === MAX_LISTED_FILES) return [...files, "…"];
          files.push(relative);
        }
      }
    }
    level = next;
  }
  return files;
}
