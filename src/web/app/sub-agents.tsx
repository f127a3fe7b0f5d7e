import type { SubAgentInfo } from "../../protocol/agent.js";

/** Background sub-agents of the thread: task, tier, progress, and Cancel while running. */
export function SubAgents({ agents, onCancel }: { agents: SubAgentInfo[]; onCancel: (id: string) => void }) {
  if (agents.length === 0) return null;
  return (
    <section class="subagents" aria-label="Sub-agents">
      <h2>Sub-agents</h2>
      <ul>
        {agents.map((agent) => (
          <li key={agent.id} class={`subagent is-${agent.status}`}>
            <span class="subagent-task" title={agent.task}>
              {agent.task}
            </span>
            <span class="subagent-meta">
              {agent.model} · {agent.status}
              {agent.status === "running"
                ? ` · ${agent.outputTokens} tok${agent.progress ? ` · ${agent.progress}` : ""}`
                : ""}
            </span>
            {agent.status === "running" ? (
              <button type="button" class="button small" onClick={() => onCancel(agent.id)}>
                Cancel
              </button>
            ) : null}
          </li>
        ))}
      </ul>
    </section>
  );
}
