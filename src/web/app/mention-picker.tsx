import { useRef, useState } from "preact/hooks";
import {
  insertMention,
  MAX_MENTION_CHOICES,
  type MentionAtCursor,
  mentionAtCursor,
} from "../../client-core/file-mention.js";

interface Picker {
  mention: MentionAtCursor;
  files: string[];
  selected: number;
}

/**
 * The `@` file picker of a text box: as the person types `@par`, the workspace files that match best
 * (asked of the host through `files`), Up/Down to choose, Tab or Enter to insert `@path`, Esc to
 * close. Only the answer to the latest query is shown.
 */
export function useMentionPicker(files: ((query: string) => Promise<string[]>) | undefined) {
  const [picker, setPicker] = useState<Picker | null>(null);
  const queries = useRef(0);

  /** The text or the cursor changed: asks for the files matching the mention at the cursor, if any. */
  const update = (text: string, cursor: number) => {
    const mention = files ? mentionAtCursor(text, cursor) : null;
    const query = ++queries.current;
    if (!mention || !files) {
      setPicker(null);
      return;
    }
    files(mention.query).then(
      (found) => {
        if (query !== queries.current) return;
        setPicker(
          found.length > 0 ? { mention, files: found.slice(0, MAX_MENTION_CHOICES), selected: 0 } : null,
        );
      },
      () => setPicker(null),
    );
  };

  /**
   * A key in the box: true when the picker took it. `insert` gets the box's new text and cursor when
   * a file was chosen.
   */
  const onKeyDown = (
    event: KeyboardEvent,
    text: string,
    cursor: number,
    insert: (next: { text: string; cursor: number }) => void,
  ): boolean => {
    if (!picker || event.isComposing) return false;
    const count = picker.files.length;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      const step = event.key === "ArrowDown" ? 1 : -1;
      setPicker({ ...picker, selected: (picker.selected + step + count) % count });
    } else if (event.key === "Escape") {
      queries.current++;
      setPicker(null);
    } else if ((event.key === "Tab" || event.key === "Enter") && !event.shiftKey) {
      queries.current++;
      setPicker(null);
      insert(insertMention(text, cursor, picker.mention, picker.files[picker.selected]!));
    } else return false;
    event.preventDefault();
    event.stopPropagation();
    return true;
  };

  const view = picker ? (
    <div class="mention-picker" role="listbox" aria-label="Files">
      {picker.files.map((file, index) => (
        <div
          key={file}
          role="option"
          tabIndex={-1}
          aria-selected={index === picker.selected}
          class={index === picker.selected ? "mention-choice is-selected" : "mention-choice"}
        >
          @{file}
        </div>
      ))}
    </div>
  ) : null;

  return { update, onKeyDown, view, open: picker !== null };
}
