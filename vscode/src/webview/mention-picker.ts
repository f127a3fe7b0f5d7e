import {
  insertMention,
  type MentionAtCursor,
  mentionAtCursor,
} from "../../../src/client-core/file-mention.js";
import { h } from "./dom.js";
import type { FromWebview } from "./messages.js";

/**
 * The chat input's `@` file picker: as the person types `@par`, it asks the extension for the
 * workspace's files that match best (`files`), lists them above the input, and takes Up/Down,
 * Tab/Enter (insert `@path`) and Esc while open. Only the answer to the latest query is shown.
 */
export class MentionPicker {
  readonly element = h("ul", { className: "mention-picker", id: "mention-picker" });
  private query = 0;
  private open: { mention: MentionAtCursor; files: string[]; selected: number } | null = null;

  constructor(
    private readonly input: HTMLTextAreaElement,
    private readonly post: (message: FromWebview) => void,
  ) {
    this.element.setAttribute("role", "listbox");
    this.element.setAttribute("aria-label", "Files");
    this.element.hidden = true;
    input.addEventListener("input", () => this.update());
  }

  /** The extension's answer to query `id`. */
  answer(id: number, files: readonly string[]): void {
    if (id !== this.query) return;
    const mention = mentionAtCursor(this.input.value, this.input.selectionStart);
    this.open = mention && files.length > 0 ? { mention, files: [...files], selected: 0 } : null;
    this.render();
  }

  /** A key in the input: true when the picker took it (the input must not act on it too). */
  onKeyDown(event: KeyboardEvent): boolean {
    const open = this.open;
    if (!open || event.isComposing) return false;
    const count = open.files.length;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      open.selected = (open.selected + (event.key === "ArrowDown" ? 1 : -1) + count) % count;
      this.render();
    } else if (event.key === "Escape") this.close();
    else if ((event.key === "Tab" || event.key === "Enter") && !event.shiftKey) {
      const next = insertMention(
        this.input.value,
        this.input.selectionStart,
        open.mention,
        open.files[open.selected]!,
      );
      this.close();
      this.input.value = next.text;
      this.input.setSelectionRange(next.cursor, next.cursor);
      this.post({ type: "typing", text: next.text });
    } else return false;
    event.preventDefault();
    return true;
  }

  private update(): void {
    const mention = mentionAtCursor(this.input.value, this.input.selectionStart);
    const id = ++this.query;
    if (!mention) {
      this.close();
      return;
    }
    this.post({ type: "files", id, query: mention.query });
  }

  private close(): void {
    this.query++;
    this.open = null;
    this.render();
  }

  private render(): void {
    const open = this.open;
    this.element.hidden = open === null;
    this.element.replaceChildren(
      ...(open?.files ?? []).map((file, index) => {
        const option = h("li", {
          className: index === open!.selected ? "mention-choice selected" : "mention-choice",
          text: `@${file}`,
        });
        option.setAttribute("role", "option");
        option.setAttribute("aria-selected", String(index === open!.selected));
        return option;
      }),
    );
  }
}
