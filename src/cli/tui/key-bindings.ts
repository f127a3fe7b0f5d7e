import type { Key } from "ink";
import { type EditorState, edit } from "./line-editor.js";
import type { PickerKey } from "./rewind-picker.js";

/** A key while `/rewind`'s picker is open, as the picker takes it; null: not one of its keys. */
export function pickerKeyOf(key: Key): PickerKey | null {
  if (key.upArrow) return "up";
  if (key.downArrow) return "down";
  if (key.return) return "enter";
  if (key.escape) return "escape";
  return null;
}

/** The editing operation a key stands for, if any. */
export function editKey(input: string, key: Key): ((state: EditorState) => EditorState) | null {
  if (key.leftArrow) return key.ctrl || key.meta ? edit.wordLeft : edit.left;
  if (key.rightArrow) return key.ctrl || key.meta ? edit.wordRight : edit.right;
  if (key.home) return edit.home;
  if (key.end) return edit.end;
  if (key.backspace) return key.meta ? edit.deleteWord : edit.backspace;
  if (key.delete) return edit.deleteForward;
  if (key.ctrl) {
    const ctrl: Record<string, (state: EditorState) => EditorState> = {
      a: edit.home,
      e: edit.end,
      b: edit.left,
      f: edit.right,
      h: edit.backspace,
      u: edit.killToStart,
      k: edit.killToEnd,
      w: edit.deleteWord,
    };
    return ctrl[input] ?? null;
  }
  if (key.meta) {
    if (input === "b") return edit.wordLeft;
    if (input === "f") return edit.wordRight;
    return null;
  }
  // Ctrl+J (a bare line feed) inserts a newline.
  if (input === "\n") return (state) => edit.insert(state, "\n");
  return null;
}
