import type { DecodedCatalog } from "../protocol/catalog.js";

/**
 * What `/skills` says, line by line, on every face that lists in text (the terminal, the editor):
 * each skill with where it comes from and its description.
 */
export function skillsLines(catalog: DecodedCatalog): string[] {
  if (catalog.skills.length === 0)
    return ["No skills. Add a folder with a SKILL.md to .agents/skills/ or ~/.config/spark/skills/."];
  return [
    `Skills (${catalog.skills.length}); the model loads one with load_skill when a task matches it:`,
    ...catalog.skills.map(
      (skill) => `  ${skill.name} (${sourceLabel(skill.source)}, ${skill.file}): ${skill.description}`,
    ),
  ];
}

/** What `/agents` says about the defined agents: each with its tools and tier. */
export function agentsLines(catalog: DecodedCatalog): string[] {
  if (catalog.agents.length === 0)
    return ["No agents defined. Add NAME.md to .agents/agents/ or ~/.config/spark/agents/."];
  return [
    `Agents (${catalog.agents.length}); delegate runs a task as one:`,
    ...catalog.agents.map((agent) => {
      const tools = agent.tools ? `tools: ${agent.tools.join(", ") || "none"}` : "all tools";
      const tier = agent.tier ? `, tier ${agent.tier}` : "";
      return `  ${agent.name} (${sourceLabel(agent.source)}, ${tools}${tier}): ${agent.description}`;
    }),
  ];
}

function sourceLabel(source: "user" | "project"): string {
  return source === "user" ? "yours" : "repository";
}
