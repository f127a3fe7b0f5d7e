/** The prompt's text and cursor (a UTF-16 offset, never inside a surrogate pair). */
export interface EditorState {
  readonly text: string;
  readonly cursor: number;
}

export const EMPTY_EDITOR: EditorState = { text: "", cursor: 0 };

/** Pure editing operations on the prompt, emacs-style where terminals have a convention. */
export const edit = {
  set(text: string): EditorState {
    return { text, cursor: text.length };
  },
  insert(state: EditorState, input: string): EditorState {
    // Pasted or typed carriage returns become newlines; other control characters are dropped.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point
    const clean = input.replace(/\r\n?/g, "\n").replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, "");
    if (!clean) return state;
    return {
      text: state.text.slice(0, state.cursor) + clean + state.text.slice(state.cursor),
      cursor: state.cursor + clean.length,
    };
  },
  backspace(state: EditorState): EditorState {
    if (state.cursor === 0) return state;
    const at = previousBoundary(state.text, state.cursor);
    return { text: state.text.slice(0, at) + state.text.slice(state.cursor), cursor: at };
  },
  deleteForward(state: EditorState): EditorState {
    if (state.cursor >= state.text.length) return state;
    const end = nextBoundary(state.text, state.cursor);
    return { text: state.text.slice(0, state.cursor) + state.text.slice(end), cursor: state.cursor };
  },
  left(state: EditorState): EditorState {
    return { ...state, cursor: previousBoundary(state.text, state.cursor) };
  },
  right(state: EditorState): EditorState {
    return { ...state, cursor: nextBoundary(state.text, state.cursor) };
  },
  /** To the start of the cursor's line. */
  home(state: EditorState): EditorState {
    return { ...state, cursor: state.text.lastIndexOf("\n", state.cursor - 1) + 1 };
  },
  /** To the end of the cursor's line. */
  end(state: EditorState): EditorState {
    const newline = state.text.indexOf("\n", state.cursor);
    return { ...state, cursor: newline === -1 ? state.text.length : newline };
  },
  /** Ctrl+U: deletes from the start of the line to the cursor. */
  killToStart(state: EditorState): EditorState {
    const start = edit.home(state).cursor;
    return { text: state.text.slice(0, start) + state.text.slice(state.cursor), cursor: start };
  },
  /** Ctrl+K: deletes from the cursor to the end of the line. */
  killToEnd(state: EditorState): EditorState {
    const end = edit.end(state).cursor;
    return { text: state.text.slice(0, state.cursor) + state.text.slice(end), cursor: state.cursor };
  },
  /** Ctrl+W: deletes the word before the cursor (and the spaces after it). */
  deleteWord(state: EditorState): EditorState {
    const start = wordStart(state.text, state.cursor);
    return { text: state.text.slice(0, start) + state.text.slice(state.cursor), cursor: start };
  },
  wordLeft(state: EditorState): EditorState {
    return { ...state, cursor: wordStart(state.text, state.cursor) };
  },
  wordRight(state: EditorState): EditorState {
    let at = state.cursor;
    while (at < state.text.length && /\s/.test(state.text[at]!)) at++;
    while (at < state.text.length && !/\s/.test(state.text[at]!)) at++;
    return { ...state, cursor: at };
  },
};

function wordStart(text: string, cursor: number): number {
  let at = cursor;
  while (at > 0 && /\s/.test(text[at - 1]!)) at--;
  while (at > 0 && !/\s/.test(text[at - 1]!)) at--;
  return at;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

function previousBoundary(text: string, at: number): number {
  if (at <= 0) return 0;
  return at >= 2 && isLowSurrogate(text.charCodeAt(at - 1)) ? at - 2 : at - 1;
}

function nextBoundary(text: string, at: number): number {
  if (at >= text.length) return text.length;
  return isLowSurrogate(text.charCodeAt(at + 1)) ? at + 2 : at + 1;
}

/**
 * What the person typed, newest last, for Up/Down. Walking back keeps the unsent draft so Down past
 * the newest entry brings it back.
 */
export class InputHistory {
  private readonly entries: string[] = [];
  /** Position while browsing; `entries.length` when not browsing. */
  private index = 0;
  private draft = "";

  constructor(private readonly capacity = 500) {}

  push(text: string): void {
    if (text.trim() && this.entries.at(-1) !== text) this.entries.push(text);
    if (this.entries.length > this.capacity) this.entries.shift();
    this.index = this.entries.length;
    this.draft = "";
  }

  /** The entry before the current one, or null at the oldest. */
  previous(current: string): string | null {
    if (this.index === 0) return null;
    if (this.index === this.entries.length) this.draft = current;
    this.index--;
    return this.entries[this.index]!;
  }

  /** The entry after the current one (the draft after the newest), or null when not browsing. */
  next(): string | null {
    if (this.index >= this.entries.length) return null;
    this.index++;
    return this.index === this.entries.length ? this.draft : this.entries[this.index]!;
  }
}
