import { agentsLines, skillsLines } from "../../../src/client-core/catalog-lines.js";
import { mcpServerLabels } from "../../../src/client-core/mcp-server-labels.js";
import {
  diffOf,
  type Entry,
  emptyView,
  type PendingApproval,
  reduceView,
  type SubAgentView,
  type ThreadView,
  type TurnRecord,
} from "../../../src/client-core/thread-view.js";
import { meterText } from "../../../src/client-core/turn-meter.js";
import {
  type FileDiff,
  type McpServerInfo,
  type RewindRestore,
  sandboxLabel,
} from "../../../src/protocol/agent.js";
import type { DecodedCatalog } from "../../../src/protocol/catalog.js";
import { type DiffTextLine, hunkLines, type PreviewFileView, patchPreviewView } from "../core/diff-lines.js";
import { MarkdownView, renderMarkdown } from "./markdown.js";
import type { ConnectionState, FromWebview, ToWebview } from "./messages.js";

declare function acquireVsCodeApi(): { postMessage(message: FromWebview): void };

const vscode = acquireVsCodeApi();
const post = (message: FromWebview) => vscode.postMessage(message);

let view: ThreadView = emptyView();
let connection: ConnectionState = { status: "idle", detail: "" };
let mcpServers: readonly McpServerInfo[] = [];
/** A row of the conversation: an entry of the view, or the end of a finished turn, placed after its entries. */
type Row = Entry | { kind: "turn"; id: string; record: TurnRecord };
/** The element of each row, and the row it shows (rows are immutable: same object, same DOM). */
const rendered = new Map<string, { row: Entry | TurnRecord; element: HTMLElement }>();
/** Each agent message's Markdown, kept across its deltas so only the streaming tail is parsed again. */
const messages = new Map<string, MarkdownView>();

function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: { className?: string; text?: string; title?: string; id?: string } = {},
  ...children: (Node | string | null)[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  if (props.className) element.className = props.className;
  if (props.text !== undefined) element.textContent = props.text;
  if (props.title) element.title = props.title;
  if (props.id) element.id = props.id;
  for (const child of children) if (child !== null) element.append(child);
  return element;
}

function button(label: string, className: string, onClick: () => void, title?: string): HTMLButtonElement {
  const element = h("button", { className, text: label, ...(title ? { title } : {}) });
  element.addEventListener("click", onClick);
  return element;
}

// Layout: header (connection, title, meter), the conversation, queued messages, the composer.
const root = document.getElementById("spark-chat-root")!;
const statusDot = h("span", { className: "dot" });
const statusText = h("span", { className: "status-text", id: "status" });
const title = h("div", { className: "title", id: "thread-title" });
const meter = h("div", { className: "meter", id: "meter" });
const header = h("header", {}, h("div", { className: "status" }, statusDot, statusText), title, meter);
const log = h("main", { id: "log" });
const empty = h(
  "div",
  { className: "empty" },
  h("p", { text: "Ask Spark about this workspace, or select code and run “Spark: Edit Selection…”." }),
  h("p", {
    className: "hint",
    text: "Enter sends · while it streams, Enter steers and Tab queues · Esc stops",
  }),
);
const subAgents = h("section", { className: "subagents", id: "subagents" });
/** The MCP servers, collapsed to one line ("MCP servers: 2 ready, 1 failed"); hidden when none. */
const mcp = h("details", { className: "mcp-servers", id: "mcp-servers" });
mcp.hidden = true;
/** What `/skills` or `/agents` typed in the input list, until closed; never sent to the model. */
const catalogBox = h("section", { className: "catalog", id: "catalog" });
catalogBox.hidden = true;
let catalog: DecodedCatalog = { skills: [], agents: [] };
const approvals = h("section", { className: "approvals", id: "approvals" });
const queued = h("ul", { className: "queued", id: "queued" });
const input = h("textarea", { id: "composer" });
input.rows = 3;
const sendButton = button("Send", "primary", () => submit("auto"));
sendButton.id = "send";
const queueButton = button("Queue", "secondary", () => submit("queue"), "Run after the current turn (Tab)");
queueButton.id = "queue";
let plan = false;
const planButton = button(
  "Plan",
  "secondary",
  () => {
    plan = !plan;
    planButton.setAttribute("aria-pressed", String(plan));
  },
  "Plan mode: the model reads and answers with a plan; edits and commands are refused",
);
planButton.id = "plan";
planButton.setAttribute("aria-pressed", "false");
const stopButton = button("Stop", "danger", () => post({ type: "interrupt" }), "Stop the turn (Esc)");
stopButton.id = "stop";
const footer = h(
  "footer",
  {},
  queued,
  input,
  h("div", { className: "actions" }, planButton, stopButton, queueButton, sendButton),
);
root.append(header, log, mcp, subAgents, catalogBox, approvals, footer);

function submit(mode: "auto" | "queue"): void {
  const text = input.value.trim();
  if (!text) return;
  const command = text.toLowerCase();
  if (command === "/skills" || command === "/agents") {
    showCatalog(command === "/skills" ? skillsLines(catalog) : agentsLines(catalog));
    input.value = "";
    return;
  }
  post({ type: "send", text, mode, plan });
  input.value = "";
}

input.addEventListener("input", () => post({ type: "typing", text: input.value }));
input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    submit("auto");
  } else if (event.key === "Tab" && !event.shiftKey && input.value.trim() && view.turn) {
    event.preventDefault();
    submit("queue");
  } else if (event.key === "Escape" && view.turn) {
    event.preventDefault();
    post({ type: "interrupt" });
  }
});
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && view.turn && event.target !== input) post({ type: "interrupt" });
});

window.addEventListener("message", (event: MessageEvent<ToWebview>) => {
  const message = event.data;
  switch (message.type) {
    case "snapshot":
      view = message.view;
      connection = message.connection;
      rendered.clear();
      messages.clear();
      log.replaceChildren();
      break;
    case "actions":
      for (const { action, at } of message.actions) view = reduceView(view, action, at);
      break;
    case "connection":
      connection = message.connection;
      break;
    case "mcp":
      mcpServers = message.servers;
      renderMcpServers();
      return;
    case "catalog":
      catalog = message.catalog;
      return;
    case "focus":
      if (message.text) input.value = input.value ? `${input.value}\n${message.text}` : message.text;
      input.focus();
      break;
    case "refill":
      input.value = message.text;
      input.focus();
      break;
  }
  render();
});

function render(): void {
  const nearBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
  statusDot.className = `dot ${connection.status}`;
  statusText.textContent = connectionLabel(connection);
  statusText.title = connection.detail;
  title.textContent = view.info?.title ?? "";
  meter.textContent = meterText(view, Date.now());
  const running = view.turn !== null;
  root.classList.toggle("running", running);
  sendButton.textContent = running ? "Steer" : "Send";
  sendButton.title = running ? "Add this to the running turn (Enter)" : "Send (Enter)";
  input.placeholder = running
    ? "Steer the running turn (Enter), queue for after it (Tab), Esc stops"
    : "Ask Spark… (Enter sends, Shift+Enter for a new line)";
  queued.replaceChildren(
    ...view.queued.map((text) => h("li", { text, title: "Queued: runs after this turn" })),
  );
  subAgents.replaceChildren(...view.subAgents.map(renderSubAgent));
  approvals.replaceChildren(...view.approvals.map(renderApproval));

  const keys = new Set<string>();
  let previous: HTMLElement | null = null;
  for (const row of rows(view)) {
    const key = `${row.kind}:${row.id}`;
    keys.add(key);
    const shown = row.kind === "turn" ? row.record : row;
    let slot = rendered.get(key);
    if (!slot || slot.row !== shown) {
      const element = row.kind === "turn" ? renderTurnEnd(row.record) : renderEntry(row);
      if (slot) slot.element.replaceWith(element);
      slot = { row: shown, element };
      rendered.set(key, slot);
    }
    const expected: ChildNode | null = previous ? previous.nextSibling : log.firstChild;
    if (expected !== slot.element) log.insertBefore(slot.element, expected);
    previous = slot.element;
  }
  for (const [key, slot] of rendered) {
    if (!keys.has(key)) {
      slot.element.remove();
      rendered.delete(key);
      messages.delete(key);
    }
  }
  if (view.entries.length === 0 && !log.contains(empty)) log.append(empty);
  if (view.entries.length > 0) empty.remove();
  if (nearBottom) log.scrollTop = log.scrollHeight;
}

/** The view's entries, with each finished turn's end after the entries that came before it. */
function rows(view: ThreadView): Row[] {
  const result: Row[] = [];
  let next = 0;
  for (const [at, entry] of view.entries.entries()) {
    for (; next < view.turns.length && view.turns[next]!.after <= at; next++)
      result.push({ kind: "turn", id: view.turns[next]!.id, record: view.turns[next]! });
    result.push(entry);
  }
  for (const record of view.turns.slice(next)) result.push({ kind: "turn", id: record.id, record });
  return result;
}

function connectionLabel(state: ConnectionState): string {
  switch (state.status) {
    case "idle":
      return "Not connected";
    case "starting":
      return "Starting spark serve…";
    case "connecting":
      return "Connecting…";
    case "connected":
      return `Connected · ${state.detail.replace(/^https?:\/\//, "")}`;
    case "reconnecting":
      return "Reconnecting…";
    case "failed":
      return state.detail || "Cannot connect";
  }
}

/** Forks the thread from this turn (hidden while a turn runs: the host refuses it then). */
function forkButton(itemId: string): HTMLElement {
  const button = h("button", {
    className: "fork",
    text: "Fork",
    title: "Continue in a new thread from this turn",
  });
  button.addEventListener("click", () => post({ type: "fork", itemId }));
  return button;
}

function renderEntry(entry: Entry): HTMLElement {
  switch (entry.kind) {
    case "user":
      return h(
        "div",
        { className: `entry user${entry.steer ? " steer" : ""}` },
        entry.steer ? h("span", { className: "badge", text: "steer" }) : null,
        h("div", { className: "bubble", text: entry.text }),
        rewindAction(entry.id),
        entry.steer ? null : forkButton(entry.id),
      );
    case "agent": {
      const element = h("div", { className: `entry agent${entry.streaming ? " streaming" : ""}` });
      const key = `agent:${entry.id}`;
      let message = messages.get(key);
      if (!message) {
        message = new MarkdownView(document);
        messages.set(key, message);
      }
      message.update(entry.text);
      element.append(message.element);
      return element;
    }
    case "notice":
      return h("div", { className: `entry notice ${entry.tone}`, text: entry.text });
    case "tool":
      return renderTool(entry);
  }
}

const REWIND_CHOICES: readonly { restore: RewindRestore; label: string }[] = [
  { restore: "both", label: "Code and conversation" },
  { restore: "conversation", label: "Conversation only" },
  { restore: "code", label: "Code only" },
];

/** A user message's rewind: a button that opens the three choices (the host refuses during a turn). */
function rewindAction(itemId: string): HTMLElement {
  const box = h("div", { className: "rewind" });
  const closed = () =>
    box.replaceChildren(
      button("Rewind", "secondary small", open, "Go back to before this message: code, conversation or both"),
    );
  const open = () =>
    box.replaceChildren(
      ...REWIND_CHOICES.map((choice) =>
        button(choice.label, "secondary small", () => {
          closed();
          post({ type: "rewind", itemId, restore: choice.restore });
        }),
      ),
      button("Cancel", "secondary small", closed),
    );
  closed();
  return box;
}

function renderMcpServers(): void {
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

function renderSubAgent(sub: SubAgentView): HTMLElement {
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
function renderApproval(approval: PendingApproval): HTMLElement {
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

function renderTool(entry: Extract<Entry, { kind: "tool" }>): HTMLElement {
  const { item } = entry;
  const files = diffOf(entry);
  const undone =
    files !== null && files.length > 0 && files.every((file) => entry.files[file.path] === "undone");
  // An apply_patch the model is still writing: the patch so far, growing line by line.
  const preview = patchPreviewView(item);
  const element = h(
    "div",
    { className: `entry tool ${item.status}${undone ? " undone" : ""}${preview ? " streaming" : ""}` },
    h(
      "div",
      { className: "tool-head" },
      h("span", { className: "tool-name", text: item.name }),
      h("span", { className: "tool-status", text: undone ? "undone" : (preview?.status ?? item.status) }),
    ),
  );
  const display = item.display;
  if (preview) {
    for (const file of preview.files) element.append(renderPreviewFile(file));
    if (preview.truncated)
      element.append(
        h("div", { className: "tool-status", text: "The rest shows once the patch is applied." }),
      );
  } else if (display?.kind === "diff") {
    for (const file of display.files) element.append(renderFile(entry, file));
    // Under the diff: the errors the edit introduced, then why some files were not checked.
    for (const d of display.diagnostics ?? [])
      element.append(
        h("div", { className: "diagnostic", text: `${d.path}:${d.line}:${d.column}: ${d.message}` }),
      );
    for (const text of display.diagnosticsNotices ?? [])
      element.append(h("div", { className: "tool-status", text }));
  } else if (display?.kind === "command") {
    element.append(h("pre", { className: "command", text: `$ ${display.command}` }));
    const details = h("details", {}, h("summary", { text: `exit ${display.exitCode ?? "?"}` }));
    details.append(h("pre", { className: "output", text: display.output }));
    element.append(details);
  } else if (item.status === "failed" && item.output) {
    element.append(h("pre", { className: "output", text: item.output }));
  }
  return element;
}

function renderFile(entry: Extract<Entry, { kind: "tool" }>, file: FileDiff): HTMLElement {
  const resolution = entry.files[file.path];
  const row = h(
    "div",
    { className: "file-row" },
    h("span", {
      className: "file-path",
      text: file.from ? `${file.from} → ${file.path}` : file.path,
      title: file.kind,
    }),
    h("span", { className: "added", text: `+${file.added}` }),
    h("span", { className: "removed", text: `−${file.removed}` }),
  );
  const settled = resolution !== undefined;
  row.append(
    button("Open", "link", () => post({ type: "patch", itemId: entry.id, path: file.path, action: "open" })),
  );
  if (!settled && entry.item.status === "completed") {
    row.append(
      button("Accept", "link accept", () =>
        post({ type: "patch", itemId: entry.id, path: file.path, action: "accept" }),
      ),
      button("Reject", "link reject", () =>
        post({ type: "patch", itemId: entry.id, path: file.path, action: "reject" }),
      ),
    );
  } else if (resolution) {
    row.append(h("span", { className: `resolution ${resolution.replace(" ", "-")}`, text: resolution }));
  }
  const details = h("details", { className: "diff" }, h("summary", { text: `${file.hunks.length} hunk(s)` }));
  for (const hunk of file.hunks) details.append(renderHunk(hunkLines(hunk)));
  return h("div", { className: "file" }, row, details);
}

/** A file of a patch being written: its name and counts so far, its hunks open (nothing to review yet). */
function renderPreviewFile(file: PreviewFileView): HTMLElement {
  const kind = file.kind === "add" ? " (new file)" : file.kind === "delete" ? " (deleted)" : "";
  const row = h(
    "div",
    { className: "file-row" },
    h("span", { className: "file-path", text: `${file.label}${kind}`, title: file.kind }),
    h("span", { className: "added", text: `+${file.added}` }),
    h("span", { className: "removed", text: `−${file.removed}` }),
  );
  return h("div", { className: "file" }, row, ...file.hunks.map(renderHunk));
}

function renderHunk(lines: DiffTextLine[]): HTMLElement {
  const pre = h("pre", { className: "hunk" });
  for (const line of lines) pre.append(h("div", { className: line.className, text: line.text }));
  return pre;
}

function renderTurnEnd(entry: TurnRecord): HTMLElement {
  const parts: string[] = [entry.status];
  if (entry.stats.timeToFirstTokenMs !== null)
    parts.push(`ttft ${Math.round(entry.stats.timeToFirstTokenMs)} ms`);
  if (entry.stats.tokensPerSecond !== null) parts.push(`${entry.stats.tokensPerSecond.toFixed(1)} tok/s`);
  parts.push(`${entry.stats.outputTokens} tokens`);
  if (entry.stats.cachedInputTokens > 0) parts.push(`${entry.stats.cachedInputTokens} cached`);
  const element = h("div", { className: `turn-end ${entry.status}`, text: parts.join(" · ") });
  if (entry.error) element.append(h("div", { className: "error", text: entry.error.message }));
  return element;
}

// The live meter moves while a turn runs, between events too.
setInterval(() => {
  if (view.turn) meter.textContent = meterText(view, Date.now());
}, 100);

render();
post({ type: "ready" });

/** Shows a `/skills` or `/agents` listing above the input, with a button that closes it. */
function showCatalog(lines: string[]): void {
  const close = button("Close", "secondary", () => {
    catalogBox.hidden = true;
  });
  catalogBox.replaceChildren(h("pre", { text: lines.join("\n") }), close);
  catalogBox.hidden = false;
}
