import { describe, expect, test } from "vitest";
import { type EditorState, EMPTY_EDITOR, edit, InputHistory } from "./line-editor.js";

const at = (text: string, cursor = text.length): EditorState => ({ text, cursor });

describe("edit", () => {
  test("inserts at the cursor, turning carriage returns into newlines and dropping control bytes", () => {
    expect(edit.insert(at("ac", 1), "b")).toEqual(at("abc", 2));
    expect(edit.insert(EMPTY_EDITOR, "a\r\nb\x07")).toEqual(at("a\nb"));
  });

  test("moves and deletes by character, never splitting a surrogate pair", () => {
    const emoji = "a\u{1F600}b";
    expect(edit.left(at(emoji, 3))).toEqual(at(emoji, 1));
    expect(edit.right(at(emoji, 1))).toEqual(at(emoji, 3));
    expect(edit.backspace(at(emoji, 3))).toEqual(at("ab", 1));
    expect(edit.deleteForward(at(emoji, 1))).toEqual(at("ab", 1));
  });

  test("line and word operations", () => {
    expect(edit.home(at("one\ntwo", 6)).cursor).toBe(4);
    expect(edit.end(at("one\ntwo", 1)).cursor).toBe(3);
    expect(edit.killToStart(at("one two", 4))).toEqual(at("two", 0));
    expect(edit.killToEnd(at("one two", 3))).toEqual(at("one", 3));
    expect(edit.deleteWord(at("git commit  "))).toEqual(at("git "));
    expect(edit.wordLeft(at("one two")).cursor).toBe(4);
    expect(edit.wordRight(at("one two", 0)).cursor).toBe(3);
  });
});

describe("InputHistory", () => {
  test("walks back and forth, keeping the unsent draft", () => {
    const history = new InputHistory();
    history.push("one");
    history.push("two");
    history.push("two");
    expect(history.previous("draft")).toBe("two");
    expect(history.previous("two")).toBe("one");
    expect(history.previous("one")).toBeNull();
    expect(history.next()).toBe("two");
    expect(history.next()).toBe("draft");
    expect(history.next()).toBeNull();
  });
});
