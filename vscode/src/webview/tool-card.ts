import { diffOf, type Entry } from "../../../src/client-core/thread-view.js";
import type { FileDiff } from "../../../src/protocol/agent.js";
import { type DiffTextLine, hunkLines, type PreviewFileView, patchPreviewView } from "../core/diff-lines.js";
import { button, h } from "./dom.js";
import { post } from "./vscode-api.js";

/** A tool call: its diff with each file to open, accept or reject; its command and output; or the patch being written. */
export function renderTool(entry: Extract<Entry, { kind: "tool" }>): HTMLElement {
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
