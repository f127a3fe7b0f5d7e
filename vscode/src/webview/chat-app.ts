import { agentsLines, skillsLines } from "../../../src/client-core/catalog-lines.js";
import { contextMeterText } from "../../../src/client-core/context-meter.js";
import {
  type Entry,
  emptyView,
  reduceView,
  type ThreadView,
  type TurnRecord,
} from "../../../src/client-core/thread-view.js";
import { meterText } from "../../../src/client-core/turn-meter.js";
import type { McpServerInfo, RewindRestore } from "../../../src/protocol/agent.js";
import type { DecodedCatalog } from "../../../src/protocol/catalog.js";
import { button, h } from "./dom.js";
import { MarkdownView } from "./markdown.js";
import { MentionPicker } from "./mention-picker.js";
import type { ConnectionState, ToWebview } from "./messages.js";
import { renderApproval, renderMcpServers, renderSubAgent } from "./side-panels.js";
import { renderTool } from "./tool-card.js";
import { post } from "./vscode-api.js";

let view: ThreadView = emptyView();
let connection: ConnectionState = { status: "idle", detail: "" };
let mcpServers: readonly McpServerInfo[] = [];
/** A row of the conversation: an entry of the view, or the end of a finished turn, placed after its entries. */
type Row = Entry | { kind: "turn"; id: string; record: TurnRecord };
/** The element of each row, and the row it shows (rows are immutable: same object, same DOM). */
const rendered = new Map<string, { row: Entry | TurnRecord; element: HTMLElement }>();
/** Each agent message's Markdown, kept across its deltas so only the streaming tail is parsed again. */
const messages = new Map<string, MarkdownView>();

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
const mentions = new MentionPicker(input, post);
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
  mentions.element,
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
  if (mentions.onKeyDown(event)) return;
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
      renderMcpServers(mcp, mcpServers);
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
    case "files":
      mentions.answer(message.id, message.files);
      return;
  }
  render();
});

function render(): void {
  const nearBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
  statusDot.className = `dot ${connection.status}`;
  statusText.textContent = connectionLabel(connection);
  statusText.title = connection.detail;
  title.textContent = view.info?.title ?? "";
  meter.textContent = meterLine();
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

/** How full the context is, then the turn's numbers: `ctx 12.3K/32.8K 38% · 1.2 s · ttft 120 ms`. */
function meterLine(): string {
  return [contextMeterText(view.context), meterText(view, Date.now())].filter(Boolean).join(" · ");
}

// The live meter moves while a turn runs, between events too.
setInterval(() => {
  if (view.turn) meter.textContent = meterLine();
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
