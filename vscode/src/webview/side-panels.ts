import { mcpServerLabels } from "../../../src/client-core/mcp-server-labels.js";
import type { PendingApproval, SubAgentView } from "../../../src/client-core/thread-view.js";
import { type McpServerInfo, sandboxLabel } from "../../../src/protocol/agent.js";
import { button, h } from "./dom.js";
import { renderMarkdown } from "./markdown.js";
import { post } from "./vscode-api.js";

// What the chat view shows beside the conversation: the MCP servers, the sub-agents, pending approvals.

/** Fills `mcp` with the MCP servers, collapsed to one line of counts; hidden when there are none. */
export function renderMcpServers(mcp: HTMLDetailsElement, mcpServers: readonly McpServerInfo[]): void {
  mcp.hidden = mcpServers.length === 0;
  const counts = new Map<string, number>();
  for (const server of mcpServers) counts.set(server.state, (counts.get(server.state) ?? 0) + 1);
  const summary = [...counts].map(([state, count]) => `${count} ${state}`).join(", ");
  const failing = mcpServers.some((server) => server.state === "failed" || server.state === "stopped");
  mcp.classList.toggle("failing", failing);
  mcp.replaceChildren(
    h("summary", { text: `MCP servers: ${summary}` }),
    h(
      "ul",
      {},
      ...mcpServers.map((server) => {
        const labels = mcpServerLabels(server);
        const badge = h("span", { className: `badge ${server.state}`, text: labels.state });
        badge.setAttribute("aria-label", labels.stateDescription);
        return h(
          "li",
          { className: `mcp-server ${server.state}` },
          h("div", { className: "mcp-head" }, h("strong", { text: server.name }), badge),
          h("div", { className: "hint", text: labels.detail }),
          labels.tools
            ? h("div", { className: "mcp-tools", text: `${labels.tools}: ${server.tools.join(", ")}` })
            : null,
          labels.error ? h("div", { className: "mcp-error", text: labels.error }) : null,
        );
      }),
    ),
  );
}

export function renderSubAgent(sub: SubAgentView): HTMLElement {
  const details = [
    sub.status,
    sub.model,
    `${sub.outputTokens} tokens`,
    sub.status === "running" ? sub.progress : "",
  ]
    .filter(Boolean)
    .join(" · ");
  const element = h(
    "div",
    { className: `entry subagent ${sub.status}` },
    h(
      "div",
      { className: "tool-head" },
      h("span", { className: "tool-name", text: "sub-agent" }),
      h("span", { text: sub.task }),
    ),
    h("div", { className: "tool-status", text: details }),
  );
  if (sub.result) element.append(renderMarkdown(document, sub.result));
  if (sub.error) element.append(h("div", { className: "error", text: sub.error }));
  return element;
}

/** What an approval would do: a command with its directory and sandbox, or an MCP tool call. */
function approvalDetails(approval: PendingApproval): HTMLElement[] {
  if (approval.kind === "mcp") {
    return [
      h("div", { className: "label", text: "Call this MCP tool?" }),
      h("pre", { className: "command", text: `${approval.server} · ${approval.tool}` }),
      h("pre", { className: "arguments", text: approval.arguments }),
    ];
  }
  return [
    h("div", { className: "label", text: "Run this command?" }),
    h("pre", { className: "command", text: approval.command }),
    h("div", { className: "cwd", text: `in ${approval.cwd}` }),
    h("div", {
      className: approval.sandbox === "danger-full-access" ? "sandbox unsandboxed" : "sandbox",
      text: sandboxLabel(approval.sandbox),
    }),
  ];
}

/** A command waiting for an answer; once answered, the view notes it in the conversation. */
export function renderApproval(approval: PendingApproval): HTMLElement {
  const respond = (approved: boolean) => () =>
    post({ type: "approval", approvalId: approval.approval_id, approved });
  return h(
    "div",
    { className: "entry approval pending" },
    ...approvalDetails(approval),
    h(
      "div",
      { className: "buttons" },
      button("Approve", "primary", respond(true)),
      button("Deny", "secondary", respond(false)),
    ),
  );
}
