import { MAX_MENTION_CHOICES, mentionAtCursor } from "../../client-core/file-mention.js";
import type { EditorState } from "./line-editor.js";
import { SLASH_COMMANDS } from "./slash-commands.js";

/** Candidates a completion menu shows at most. */
export const MAX_COMPLETIONS = MAX_MENTION_CHOICES;

/** What the word at the cursor is being completed as. */
export interface CompletionTarget {
  kind: "command" | "file";
  /** Where the word starts (its `/` or `@`). */
  start: number;
  /** The word without its `/` or `@`, up to the cursor. */
  query: string;
}

export interface CompletionItem {
  /** What replaces the word: `/rewind`, `@src/parser.ts`. */
  value: string;
  /** Shown beside it, dimmed. Default: nothing. */
  description?: string;
}

/** The menu under the prompt: the candidates for the word at the cursor, one selected. */
export interface CompletionMenu {
  target: CompletionTarget;
  items: readonly CompletionItem[];
  selected: number;
}

/**
 * The word at the cursor, when it can be completed: a slash command being typed (`/re`, the whole
 * prompt so far) or an `@` mention (`@par`, at the start or after whitespace). Null otherwise.
 */
export function completionTarget(editor: EditorState): CompletionTarget | null {
  const before = editor.text.slice(0, editor.cursor);
  const after = editor.text.slice(editor.cursor);
  if (after !== "" && !/^\s/.test(after)) return null; // inside a word
  const command = /^\/(\S*)$/.exec(before);
  if (command) return { kind: "command", start: 0, query: command[1]! };
  const mention = mentionAtCursor(editor.text, editor.cursor);
  return mention ? { kind: "file", ...mention } : null;
}

/** The slash commands whose name starts with `query`, as `/help` lists them. */
export function commandCompletions(query: string): CompletionItem[] {
  const prefix = query.toLowerCase();
  return SLASH_COMMANDS.filter((command) => command.name.startsWith(prefix))
    .slice(0, MAX_COMPLETIONS)
    .map((command) => ({ value: `/${command.name}`, description: command.description }));
}

/** Moves the selection up or down, wrapping around. */
export function moveSelection(menu: CompletionMenu, step: 1 | -1): CompletionMenu {
  const count = menu.items.length;
  return { ...menu, selected: (menu.selected + step + count) % count };
}

/** The prompt with the word at the cursor replaced by the selected candidate and a space. */
export function applyCompletion(editor: EditorState, menu: CompletionMenu): EditorState {
  const item = menu.items[menu.selected];
  if (!item) return editor;
  const head = editor.text.slice(0, menu.target.start) + item.value;
  const tail = editor.text.slice(editor.cursor);
  const spaced = tail.startsWith(" ") ? tail : ` ${tail}`;
  return { text: head + spaced, cursor: head.length + 1 };
}
