import type { CatalogAgentInfo, CatalogSkillInfo } from "../../protocol/agent.js";
import { type AgentDefinition, discoverAgents } from "./agent-definitions.js";
import type { DefinitionPlaces } from "./definition-places.js";
import { discoverSkills, type Skill } from "./skills.js";

/** The skills and agents a session has, read once when it starts. */
export interface Catalog {
  /** Sorted by name. */
  skills: readonly Skill[];
  /** Sorted by name. */
  agents: readonly AgentDefinition[];
  /** Each file that is not used, and why: said to the person, never to the model. */
  problems: readonly string[];
}

/** Reads the skills and agents of the person's config folder and of the repository. */
export async function loadCatalog(places: DefinitionPlaces): Promise<Catalog> {
  const problems: string[] = [];
  const skills = await discoverSkills(places, problems);
  const agents = await discoverAgents(places, problems);
  return { skills, agents, problems };
}

export const EMPTY_CATALOG: Catalog = { skills: [], agents: [], problems: [] };

/** The catalog as every face lists it (`/skills`, `/agents`): no instructions, no real paths. */
export function catalogInfo(catalog: Catalog): { skills: CatalogSkillInfo[]; agents: CatalogAgentInfo[] } {
  return {
    skills: catalog.skills.map(({ name, description, source, file }) => ({
      name,
      description,
      source,
      file,
    })),
    agents: catalog.agents.map(({ name, description, source, file, tools, tier }) => ({
      name,
      description,
      source,
      file,
      ...(tools ? { tools } : {}),
      ...(tier !== undefined ? { tier } : {}),
    })),
  };
}
