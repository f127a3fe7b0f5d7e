import path from "node:path";
import { readBounded } from "../tools/internal/bounded-read.js";
import { codeOf, type DefinitionPlaces, type DefinitionSource, folderEntries } from "./definition-places.js";
import { oneLine, parseFrontmatter } from "./frontmatter.js";

/** A SKILL.md skill: its name and description are in the prompt; the model loads the rest. */
export interface Skill {
  name: string;
  description: string;
  source: DefinitionSource;
  /** The skill folder's real path: `load_skill` reads only inside it. */
  dir: string;
  /** Its SKILL.md as the person is told of it. */
  file: string;
}

/** Bytes of a SKILL.md at most; a larger one is reported and not used. */
export const SKILL_FILE_MAX_BYTES = 64 * 1024;
/** Characters of a skill's description at most (the SKILL.md format's own bound). */
export const SKILL_DESCRIPTION_MAX_CHARS = 1024;
/** UTF-8 bytes of the prompt's skill list at most; skills past it (by name) are left out. */
export const SKILLS_PROMPT_MAX_BYTES = 16 * 1024;
/** Lowercase letters, digits and single hyphens, at most 64 characters (the SKILL.md format's rule). */
export const SKILL_NAME = /^(?=.{1,64}$)[a-z0-9]+(-[a-z0-9]+)*$/;

/**
 * The skills of the person's config folder and of the repository's `.agents/skills/`: each a
 * folder named after the skill, holding a SKILL.md whose frontmatter gives `name` (the folder's
 * name) and `description`. Sorted by name; the person's skill wins over the repository's of the
 * same name. Each file that is not a valid skill is reported in `problems` and left out.
 */
export async function discoverSkills(places: DefinitionPlaces, problems: string[]): Promise<Skill[]> {
  const byName = new Map<string, Skill>();
  for (const entry of await folderEntries(places, "skills", problems)) {
    const file = path.join(entry.shown, "SKILL.md");
    const skill = await readSkill(entry.name, entry.real, file, entry.source);
    if ("problem" in skill) {
      problems.push(`${file} is not used: ${skill.problem}.`);
      continue;
    }
    const held = byName.get(skill.name);
    if (held) {
      problems.push(`${file} is not used: ${held.file} defines the skill '${skill.name}' already.`);
      continue;
    }
    byName.set(skill.name, skill);
  }
  const sorted = [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
  let bytes = 0;
  return sorted.filter((skill) => {
    bytes += Buffer.byteLength(skillLine(skill)) + 1;
    if (bytes <= SKILLS_PROMPT_MAX_BYTES) return true;
    problems.push(
      `${skill.file} is not used: the skills' names and descriptions pass ${SKILLS_PROMPT_MAX_BYTES} bytes.`,
    );
    return false;
  });
}

/** A skill's line in the system prompt. */
export function skillLine(skill: Skill): string {
  return `- ${skill.name}: ${skill.description}`;
}

async function readSkill(
  folder: string,
  dir: string,
  file: string,
  source: DefinitionSource,
): Promise<Skill | { problem: string }> {
  const text = await readSkillText(path.join(dir, "SKILL.md"));
  if (typeof text !== "string") return text;
  const parsed = parseFrontmatter(text);
  if ("problem" in parsed) return parsed;
  const { name, description } = parsed.fields;
  if (typeof name !== "string" || !SKILL_NAME.test(name))
    return { problem: "its name is not 1-64 lowercase letters, digits and single hyphens" };
  if (name !== folder) return { problem: `its name '${name}' is not its folder's name '${folder}'` };
  const oneLineDescription = oneLine(description, SKILL_DESCRIPTION_MAX_CHARS);
  if (oneLineDescription === null)
    return { problem: `its description is not a text of 1-${SKILL_DESCRIPTION_MAX_CHARS} characters` };
  return { name, description: oneLineDescription, source, dir, file };
}

/** SKILL.md's text, or why it cannot be used. */
export async function readSkillText(file: string): Promise<string | { problem: string }> {
  let read: Awaited<ReturnType<typeof readBounded>>;
  try {
    read = await readBounded(file, SKILL_FILE_MAX_BYTES);
  } catch (error) {
    const code = codeOf(error);
    if (code === "ENOENT") return { problem: "the folder has no SKILL.md" };
    if (code === "ELOOP") return { problem: "it is a symbolic link" };
    return { problem: `it was not read (${code})` };
  }
  if (read.kind === "not_file") return { problem: "it is not a regular file" };
  if (read.kind === "too_large")
    return { problem: `it is ${read.size} bytes, more than ${SKILL_FILE_MAX_BYTES}` };
  return read.content.toString("utf8");
}
