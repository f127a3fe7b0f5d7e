import path from "node:path";
import * as vscode from "vscode";
import type { StampedEvent } from "../../src/client-core/thread-view.js";
import type { ThreadItem } from "../../src/protocol/agent.js";
import type { ChatController } from "./chat-controller.js";
import { applyReplacement, FileReview, type HunkPlacement } from "./core/hunk-edits.js";

const ORIGINAL_SCHEME = "spark-original";

/** One file of one applied patch under review. */
interface ReviewRecord {
  review: FileReview;
  threadId: string;
  uri: vscode.Uri;
}

/** Where a command acts: a hunk named by a CodeLens, else the one at the cursor. */
interface HunkTarget {
  uri?: vscode.Uri;
  itemId?: string;
  index?: number;
}

/**
 * Reviews the agent's edits in the editor. The agent applies each patch on disk; this marks every
 * hunk of it in the file (added lines highlighted, removed ones in a hover and the diff view) with
 * Accept / Reject above it. Accept keeps a hunk; reject edits the document back to the hunk's old
 * side with a WorkspaceEdit (so the editor's undo can take it back) and saves. A file settled as
 * accepted is reported to the host (`patch.accept`); a whole file rejected before any hunk was
 * touched is restored by the host (`patch.reject`), byte for byte.
 */
export class ReviewManager
  implements vscode.CodeLensProvider, vscode.TextDocumentContentProvider, vscode.Disposable
{
  private readonly records = new Map<string, ReviewRecord[]>();
  private readonly lensEmitter = new vscode.EventEmitter<void>();
  private readonly originalEmitter = new vscode.EventEmitter<vscode.Uri>();
  private readonly disposables: vscode.Disposable[] = [];
  private readonly added = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    backgroundColor: new vscode.ThemeColor("diffEditor.insertedLineBackground"),
    overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.addedForeground"),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
  });
  private readonly removed = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    borderColor: new vscode.ThemeColor("editorOverviewRuler.deletedForeground"),
    borderStyle: "solid",
    borderWidth: "2px 0 0 0",
    overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.deletedForeground"),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
  });

  readonly onDidChangeCodeLenses = this.lensEmitter.event;
  readonly onDidChange = this.originalEmitter.event;

  constructor(
    private readonly controller: ChatController,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.disposables.push(
      controller.onEvent((event) => this.onEvent(event)),
      vscode.languages.registerCodeLensProvider({ scheme: "file" }, this),
      vscode.workspace.registerTextDocumentContentProvider(ORIGINAL_SCHEME, this),
      vscode.window.onDidChangeVisibleTextEditors(() => this.refresh()),
      vscode.window.onDidChangeActiveTextEditor(() => this.refresh()),
      vscode.workspace.onDidChangeTextDocument((change) => {
        if (this.records.has(change.document.uri.fsPath)) this.refresh();
      }),
    );
  }

  private onEvent(event: StampedEvent): void {
    if (event.type === "item.completed" && event.item.type === "tool_call") {
      this.addReviews(event.thread_id, event.item);
    } else if (event.type === "patch.resolved") {
      for (const record of this.allRecords()) {
        if (record.review.itemId === event.item_id && this.relative(record) === event.path) {
          record.review.settleAll(event.resolution);
        }
      }
      this.prune();
    } else if (event.type === "patch.undone") {
      for (const record of this.allRecords()) {
        if (record.review.itemId === event.item_id) record.review.settleAll("rejected");
      }
      this.prune();
    }
  }

  private addReviews(threadId: string, item: Extract<ThreadItem, { type: "tool_call" }>): void {
    if (item.status !== "completed" || item.display?.kind !== "diff") return;
    const cwd = this.controller.thread?.cwd;
    if (!cwd) return;
    let first: vscode.Uri | null = null;
    for (const diff of item.display.files) {
      if (diff.kind === "delete") continue;
      const uri = vscode.Uri.file(path.resolve(cwd, diff.path));
      const list = this.records.get(uri.fsPath) ?? [];
      list.push({ review: new FileReview(item.id, diff), threadId, uri });
      this.records.set(uri.fsPath, list);
      first ??= uri;
    }
    this.refresh();
    if (first && vscode.workspace.getConfiguration("spark").get<boolean>("revealEdits", true)) {
      void this.open(first, item.id);
    }
  }

  /** Opens a reviewed file at its first pending hunk. */
  async open(uri: vscode.Uri, itemId?: string): Promise<void> {
    const document = await vscode.workspace.openTextDocument(uri);
    const editor = await vscode.window.showTextDocument(document, { preview: false, preserveFocus: true });
    const record = (this.records.get(uri.fsPath) ?? []).find((r) => !itemId || r.review.itemId === itemId);
    const placement = record?.review.place(document.getText())[0];
    if (placement) {
      const range = new vscode.Range(
        placement.startLine,
        0,
        Math.max(placement.startLine, placement.endLine - 1),
        0,
      );
      editor.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
    }
    this.refresh();
  }

  /** The file of a chat "Open / Accept / Reject" button. */
  async resolveFromChat(
    itemId: string,
    relPath: string,
    action: "open" | "accept" | "reject",
  ): Promise<void> {
    const cwd = this.controller.thread?.cwd ?? "";
    const uri = vscode.Uri.file(path.resolve(cwd, relPath));
    if (action === "open") {
      await this.open(uri, itemId);
      return;
    }
    const record = (this.records.get(uri.fsPath) ?? []).find((r) => r.review.itemId === itemId);
    if (!record) {
      // Not under review here (a replayed thread, an added or deleted file): the host settles it.
      await this.controller.resolvePatch(itemId, relPath, action);
      return;
    }
    if (action === "accept") await this.acceptFile(record);
    else await this.rejectFile(record);
  }

  async acceptHunk(target: HunkTarget = {}): Promise<void> {
    const found = await this.target(target);
    if (!found) return;
    found.record.review.accept(found.index);
    await this.settled(found.record);
  }

  async rejectHunk(target: HunkTarget = {}): Promise<void> {
    const found = await this.target(target);
    if (!found) return;
    const { record, index } = found;
    if (record.review.diff.kind !== "update") {
      await this.rejectFile(record);
      return;
    }
    if (!(await this.rejectLocally(record, index))) return;
    await this.settled(record);
  }

  /** All pending hunks of the active file (or of `uri`). */
  async acceptFileAt(uri?: vscode.Uri): Promise<void> {
    for (const record of this.recordsAt(uri)) await this.acceptFile(record);
  }

  async rejectFileAt(uri?: vscode.Uri): Promise<void> {
    for (const record of this.recordsAt(uri)) await this.rejectFile(record);
  }

  private recordsAt(uri?: vscode.Uri): ReviewRecord[] {
    const at = uri ?? vscode.window.activeTextEditor?.document.uri;
    return at ? (this.records.get(at.fsPath) ?? []).filter((record) => !record.review.settled) : [];
  }

  private async acceptFile(record: ReviewRecord): Promise<void> {
    record.review.settleAll("accepted");
    await this.settled(record);
  }

  private async rejectFile(record: ReviewRecord): Promise<void> {
    const document = vscode.workspace.textDocuments.find((d) => d.uri.fsPath === record.uri.fsPath);
    const untouched = record.review.states.every((state) => state === "pending") && !document?.isDirty;
    if (untouched || record.review.diff.kind !== "update") {
      // The host restores the file byte for byte; its patch.resolved settles the review.
      await this.controller.resolvePatch(
        record.review.itemId,
        this.relative(record),
        "reject",
        record.threadId,
      );
      return;
    }
    for (const index of record.review.pending) {
      if (!(await this.rejectLocally(record, index))) return;
    }
    await this.settled(record);
  }

  /** Edits the document back to hunk `index`'s old side and saves it; false if it could not. */
  private async rejectLocally(record: ReviewRecord, index: number): Promise<boolean> {
    const document = await this.freshDocument(record.uri);
    const edit = record.review.planReject(document.getText(), index);
    if (!edit) {
      void vscode.window.showWarningMessage(
        `Spark: that change to ${path.basename(record.uri.fsPath)} was edited since; it can no longer be rejected alone.`,
      );
      return false;
    }
    const workspaceEdit = new vscode.WorkspaceEdit();
    workspaceEdit.replace(
      document.uri,
      new vscode.Range(document.positionAt(edit.start), document.positionAt(edit.end)),
      edit.text,
    );
    if (!(await vscode.workspace.applyEdit(workspaceEdit))) return false;
    record.review.markRejected(index);
    await document.save();
    this.log.info(`Rejected hunk ${index + 1} of ${this.relative(record)}`);
    this.refresh();
    return true;
  }

  /** Reports a settled file to the host and drops finished reviews. */
  private async settled(record: ReviewRecord): Promise<void> {
    this.refresh();
    const outcome = record.review.outcome;
    if (outcome) this.log.info(`${this.relative(record)}: ${outcome}`);
    if (outcome === "accepted") {
      await this.controller
        .resolvePatch(record.review.itemId, this.relative(record), "accept", record.threadId)
        .catch(() => {});
    } else if (outcome) {
      // The host restores or keeps whole files only; hunk by hunk, the result is the editor's.
      const shown = outcome === "mixed" ? "partly accepted" : "rejected";
      this.controller.noteOutcome(record.threadId, record.review.itemId, this.relative(record), shown);
    }
    this.prune();
  }

  /**
   * The document as on disk: right after a patch, VS Code may not have reloaded it yet. A document
   * with unsaved changes is taken as it is.
   */
  private async freshDocument(uri: vscode.Uri): Promise<vscode.TextDocument> {
    const document = await vscode.workspace.openTextDocument(uri);
    if (document.isDirty) return document;
    const disk = new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
    if (document.getText() === disk) return document;
    await new Promise<void>((resolve) => {
      const finish = () => {
        clearTimeout(timer);
        listener.dispose();
        resolve();
      };
      const timer = setTimeout(finish, 3000);
      const listener = vscode.workspace.onDidChangeTextDocument((change) => {
        if (change.document === document && document.getText() === disk) finish();
      });
    });
    return document;
  }

  private async target(target: HunkTarget): Promise<{ record: ReviewRecord; index: number } | null> {
    const editor = vscode.window.activeTextEditor;
    const uri = target.uri ?? editor?.document.uri;
    if (!uri) return null;
    const records = (this.records.get(uri.fsPath) ?? []).filter((record) => !record.review.settled);
    if (target.itemId !== undefined && target.index !== undefined) {
      const record = records.find((r) => r.review.itemId === target.itemId);
      return record ? { record, index: target.index } : null;
    }
    const document = await vscode.workspace.openTextDocument(uri);
    const line = editor?.document.uri.fsPath === uri.fsPath ? editor.selection.active.line : 0;
    // The newest patch first: its hunks are the ones the text holds as they were written.
    for (const record of [...records].reverse()) {
      const index = record.review.hunkNear(document.getText(), line);
      if (index !== null) return { record, index };
    }
    void vscode.window.showInformationMessage("Spark: no change to review here.");
    return null;
  }

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    const lenses: vscode.CodeLens[] = [];
    for (const record of this.records.get(document.uri.fsPath) ?? []) {
      for (const placement of record.review.place(document.getText())) {
        const range = new vscode.Range(placement.startLine, 0, placement.startLine, 0);
        const args: HunkTarget = { uri: document.uri, itemId: record.review.itemId, index: placement.index };
        const hunk = record.review.hunks[placement.index]!;
        const counts = `+${hunk.lines.filter((l) => l.kind === "add").length} −${hunk.lines.filter((l) => l.kind === "remove").length}`;
        lenses.push(
          new vscode.CodeLens(range, {
            title: "$(check) Accept",
            command: "spark.acceptHunk",
            arguments: [args],
          }),
          new vscode.CodeLens(range, {
            title: "$(close) Reject",
            command: "spark.rejectHunk",
            arguments: [args],
          }),
          new vscode.CodeLens(range, {
            title: `Spark ${counts} · diff`,
            command: "spark.openDiff",
            arguments: [document.uri, record.review.itemId],
          }),
        );
      }
    }
    return lenses;
  }

  /** The file as it was before the pending hunks of a patch: the left side of its diff view. */
  provideTextDocumentContent(uri: vscode.Uri): string {
    const query = new URLSearchParams(uri.query);
    const file = vscode.Uri.file(query.get("path") ?? "");
    const record = (this.records.get(file.fsPath) ?? []).find((r) => r.review.itemId === query.get("item"));
    const document = vscode.workspace.textDocuments.find((d) => d.uri.fsPath === file.fsPath);
    if (!record || !document) return "";
    let text = document.getText();
    const review = new FileReview(record.review.itemId, record.review.diff);
    record.review.states.forEach((state, index) => {
      if (state === "rejected") review.markRejected(index);
      else if (state === "accepted") review.accept(index);
    });
    for (const index of review.pending) {
      const edit = review.planReject(text, index);
      if (!edit) continue;
      text = applyReplacement(text, edit);
      review.markRejected(index);
    }
    return text;
  }

  async openDiff(uri: vscode.Uri, itemId: string): Promise<void> {
    const original = vscode.Uri.from({
      scheme: ORIGINAL_SCHEME,
      path: uri.path,
      query: new URLSearchParams({ path: uri.fsPath, item: itemId }).toString(),
    });
    this.originalEmitter.fire(original);
    await vscode.commands.executeCommand(
      "vscode.diff",
      original,
      uri,
      `${path.basename(uri.fsPath)} (Spark's change)`,
    );
  }

  /** Redraws the marks in every visible editor and the CodeLenses; updates the context key. */
  refresh(): void {
    for (const editor of vscode.window.visibleTextEditors) {
      const placements: { record: ReviewRecord; placement: HunkPlacement }[] = [];
      for (const record of this.records.get(editor.document.uri.fsPath) ?? []) {
        for (const placement of record.review.place(editor.document.getText()))
          placements.push({ record, placement });
      }
      const added: vscode.DecorationOptions[] = [];
      const removed: vscode.DecorationOptions[] = [];
      const lastLine = Math.max(0, editor.document.lineCount - 1);
      for (const { record, placement } of placements) {
        const hover = removedHover(
          record.review.hunks[placement.index]!.lines.filter((l) => l.kind === "remove").map((l) => l.text),
        );
        for (const line of placement.addedLines) {
          added.push({
            range: new vscode.Range(line, 0, line, 0),
            ...(hover ? { hoverMessage: hover } : {}),
          });
        }
        for (const block of placement.removed) {
          const line = Math.min(block.beforeLine, lastLine);
          removed.push({
            range: new vscode.Range(line, 0, line, 0),
            hoverMessage: removedHover(block.lines)!,
          });
        }
      }
      editor.setDecorations(this.added, added);
      editor.setDecorations(this.removed, removed);
    }
    const active = vscode.window.activeTextEditor?.document;
    const pending =
      active !== undefined &&
      (this.records.get(active.uri.fsPath) ?? []).some(
        (record) => record.review.place(active.getText()).length > 0,
      );
    void vscode.commands.executeCommand("setContext", "spark.hasPendingChanges", pending);
    this.lensEmitter.fire();
  }

  private prune(): void {
    for (const [key, list] of this.records) {
      const open = list.filter((record) => !record.review.settled);
      if (open.length === 0) this.records.delete(key);
      else this.records.set(key, open);
    }
    this.refresh();
  }

  private allRecords(): ReviewRecord[] {
    return [...this.records.values()].flat();
  }

  private relative(record: ReviewRecord): string {
    return record.review.diff.path;
  }

  dispose(): void {
    for (const disposable of this.disposables) disposable.dispose();
    this.added.dispose();
    this.removed.dispose();
    this.lensEmitter.dispose();
    this.originalEmitter.dispose();
  }
}

function removedHover(lines: string[]): vscode.MarkdownString | undefined {
  if (lines.length === 0) return undefined;
  const markdown = new vscode.MarkdownString();
  markdown.appendMarkdown("**Spark removed:**\n");
  markdown.appendCodeblock(lines.join("\n"));
  return markdown;
}
