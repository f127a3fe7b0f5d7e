import type { CatalogAgentInfo, CatalogSkillInfo } from "./agent.js";

/**
 * Bounds of a `catalog` event. A client rejects an event past any of them whole (it keeps the
 * catalog it had); the host's own stay within them (see the agent's definitions/ limits).
 */
export const CATALOG_LIMITS = {
  skills: 512,
  agents: 64,
  /** Characters of a name. */
  nameChars: 64,
  descriptionChars: 1024,
  /** Characters of a file path. */
  fileChars: 4096,
  toolsPerAgent: 64,
  toolNameChars: 64,
  tierChars: 64,
} as const;

const SOURCES: readonly CatalogSkillInfo["source"][] = ["user", "project"];

export interface DecodedCatalog {
  skills: CatalogSkillInfo[];
  agents: CatalogAgentInfo[];
}

/**
 * Checks a `catalog` event from a host (untrusted: any JSON) against {@link CatalogSkillInfo},
 * {@link CatalogAgentInfo} and {@link CATALOG_LIMITS}; returns copies holding only the known fields,
 * or why it does not match. Hand-written, as decodeMcpServers is: it runs in the browser and the
 * editor's webview too.
 */
export function decodeCatalog(
  skills: unknown,
  agents: unknown,
): { ok: true; catalog: DecodedCatalog } | { ok: false; reason: string } {
  try {
    return { ok: true, catalog: { skills: decodeSkills(skills), agents: decodeAgents(agents) } };
  } catch (error) {
    if (error instanceof CatalogMismatch) return { ok: false, reason: error.message };
    throw error;
  }
}

class CatalogMismatch extends Error {}

function decodeSkills(value: unknown): CatalogSkillInfo[] {
  return entries(value, "skills", CATALOG_LIMITS.skills).map((entry, index) => ({
    ...common(entry, `skills[${index}]`),
  }));
}

function decodeAgents(value: unknown): CatalogAgentInfo[] {
  return entries(value, "agents", CATALOG_LIMITS.agents).map((entry, index) => {
    const at = `agents[${index}]`;
    const agent: CatalogAgentInfo = common(entry, at);
    if (entry.tools !== undefined) {
      if (!Array.isArray(entry.tools) || entry.tools.length > CATALOG_LIMITS.toolsPerAgent)
        throw mismatch(`${at}.tools`, `is not a list of at most ${CATALOG_LIMITS.toolsPerAgent} names`);
      agent.tools = entry.tools.map((tool, toolIndex) =>
        text(tool, `${at}.tools[${toolIndex}]`, CATALOG_LIMITS.toolNameChars),
      );
    }
    if (entry.tier !== undefined) agent.tier = text(entry.tier, `${at}.tier`, CATALOG_LIMITS.tierChars);
    return agent;
  });
}

function entries(value: unknown, param: string, max: number): Record<string, unknown>[] {
  if (!Array.isArray(value)) throw mismatch(param, "is not an array");
  if (value.length > max) throw mismatch(param, `lists more than ${max} entries`);
  const names = new Set<string>();
  return value.map((raw, index) => {
    if (typeof raw !== "object" || raw === null || Array.isArray(raw))
      throw mismatch(`${param}[${index}]`, "is not an object");
    const { name } = raw as Record<string, unknown>;
    if (typeof name === "string" && names.has(name))
      throw mismatch(`${param}[${index}].name`, `repeats ${JSON.stringify(name)}`);
    if (typeof name === "string") names.add(name);
    return raw as Record<string, unknown>;
  });
}

function common(entry: Record<string, unknown>, at: string): CatalogSkillInfo {
  const source = entry.source;
  if (typeof source !== "string" || !(SOURCES as readonly string[]).includes(source))
    throw mismatch(`${at}.source`, `is not one of ${SOURCES.join(", ")}`);
  return {
    name: text(entry.name, `${at}.name`, CATALOG_LIMITS.nameChars),
    description: text(entry.description, `${at}.description`, CATALOG_LIMITS.descriptionChars),
    source: source as CatalogSkillInfo["source"],
    file: text(entry.file, `${at}.file`, CATALOG_LIMITS.fileChars),
  };
}

function text(value: unknown, param: string, maxChars: number): string {
  if (typeof value !== "string" || value === "" || value.length > maxChars)
    throw mismatch(param, `is not a text of 1-${maxChars} characters`);
  return value;
}

function mismatch(param: string, problem: string): CatalogMismatch {
  return new CatalogMismatch(`${param} ${problem}`);
}
