import { mcpServerLabels } from "../../client-core/mcp-server-labels.js";
import type { McpServerInfo } from "../../protocol/agent.js";

/**
 * The agent's MCP servers in the side panel: each with a state badge, its tool count (expanding to
 * the tool names) and, for a failed or stopped one, why. Hidden when there are none.
 */
export function McpServers({ servers }: { servers: readonly McpServerInfo[] }) {
  if (servers.length === 0) return null;
  return (
    <section class="mcp-servers" aria-labelledby="mcp-servers-title">
      <h2 id="mcp-servers-title">MCP servers</h2>
      <ul>
        {servers.map((server) => {
          const labels = mcpServerLabels(server);
          return (
            <li key={server.name} class={`mcp-server is-${server.state}`}>
              <div class="mcp-server-head">
                <span class="mcp-server-name">{server.name}</span>
                <span
                  class={`badge mcp-state is-${server.state}`}
                  role="img"
                  aria-label={labels.stateDescription}
                >
                  {labels.state}
                </span>
              </div>
              <span class="mcp-server-detail">{labels.detail}</span>
              {labels.tools ? (
                <details class="mcp-tools">
                  <summary>{labels.tools}</summary>
                  <ul aria-label={`Tools of ${server.name}`}>
                    {server.tools.map((tool) => (
                      <li key={tool}>
                        <code>{tool}</code>
                      </li>
                    ))}
                  </ul>
                </details>
              ) : null}
              {labels.error ? <p class="mcp-server-error">{labels.error}</p> : null}
            </li>
          );
        })}
      </ul>
    </section>
  );
}
