import type { DecodedCatalog } from "../../protocol/catalog.js";

/** What `/skills` and `/agents` typed in the composer show, above it, until closed. */
export type CatalogShown = "skills" | "agents";

const SOURCE: Record<"user" | "project", string> = { user: "yours", project: "repository" };

/**
 * The skills the model may load, or the agents `delegate` may run a task as: each with its
 * description, where it comes from, and an agent's tools and tier.
 */
export function CatalogPanel({
  catalog,
  shown,
  onClose,
}: {
  catalog: DecodedCatalog;
  shown: CatalogShown;
  onClose: () => void;
}) {
  const title = shown === "skills" ? "Skills" : "Agents";
  const entries = shown === "skills" ? catalog.skills : catalog.agents;
  return (
    <section class="catalog-panel" aria-label={title}>
      <div class="catalog-head">
        <h2>
          {title} ({entries.length})
        </h2>
        <button
          type="button"
          class="icon-button"
          aria-label={`Close ${title.toLowerCase()}`}
          onClick={onClose}
        >
          ×
        </button>
      </div>
      {entries.length === 0 ? (
        <p class="catalog-empty">
          {shown === "skills"
            ? "No skills. Add a folder with a SKILL.md to .agents/skills/ or ~/.config/spark/skills/."
            : "No agents defined. Add NAME.md to .agents/agents/ or ~/.config/spark/agents/."}
        </p>
      ) : (
        <ul>
          {shown === "skills"
            ? catalog.skills.map((skill) => (
                <li key={skill.name}>
                  <code class="catalog-name">{skill.name}</code>
                  <span class="catalog-meta">
                    {SOURCE[skill.source]} · {skill.file}
                  </span>
                  <p>{skill.description}</p>
                </li>
              ))
            : catalog.agents.map((agent) => (
                <li key={agent.name}>
                  <code class="catalog-name">{agent.name}</code>
                  <span class="catalog-meta">
                    {SOURCE[agent.source]} ·{" "}
                    {agent.tools ? `tools: ${agent.tools.join(", ") || "none"}` : "all tools"}
                    {agent.tier ? ` · tier ${agent.tier}` : ""}
                  </span>
                  <p>{agent.description}</p>
                </li>
              ))}
        </ul>
      )}
    </section>
  );
}
