import { describe, expect, it } from "vitest";
import {
  applyCompletion,
  type CompletionMenu,
  commandCompletions,
  completionTarget,
  moveSelection,
} from "./completion-menu.js";
import { edit } from "./line-editor.js";

describe("completionTarget", () => {
  it("a slash command being typed, the whole prompt so far", () => {
    expect(completionTarget(edit.set("/re"))).toEqual({ kind: "command", start: 0, query: "re" });
    expect(completionTarget(edit.set("/compact the"))).toBeNull();
    expect(completionTarget(edit.set("see /re"))).toBeNull();
  });

  it("an @ mention at the cursor, at the start or after whitespace; not an e-mail address, not inside a word", () => {
    expect(completionTarget(edit.set("fix @src/pa"))).toEqual({ kind: "file", start: 4, query: "src/pa" });
    expect(completionTarget(edit.set("@"))).toEqual({ kind: "file", start: 0, query: "" });
    expect(completionTarget(edit.set("mail me@x.org"))).toBeNull();
    expect(completionTarget({ text: "@abc rest", cursor: 2 })).toBeNull();
    expect(completionTarget({ text: "@ab rest", cursor: 3 })).toEqual({
      kind: "file",
      start: 0,
      query: "ab",
    });
  });
});

describe("commandCompletions", () => {
  it("the commands starting with what was typed", () => {
    expect(commandCompletions("re").map((item) => item.value)).toEqual(["/rewind", "/review"]);
    expect(commandCompletions("di").map((item) => item.value)).toEqual(["/diff"]);
    expect(commandCompletions("zz")).toEqual([]);
    expect(commandCompletions("").length).toBeLessThanOrEqual(8);
  });
});

describe("applyCompletion", () => {
  const menu = (start: number, values: string[], selected = 0): CompletionMenu => ({
    target: { kind: "file", start, query: "" },
    items: values.map((value) => ({ value })),
    selected,
  });

  it("replaces the word at the cursor with the selected candidate and a space, keeping the rest", () => {
    expect(applyCompletion(edit.set("fix @pa"), menu(4, ["@src/parser.ts"]))).toEqual({
      text: "fix @src/parser.ts ",
      cursor: 19,
    });
    expect(applyCompletion({ text: "@pa and more", cursor: 3 }, menu(0, ["@a.ts", "@b.ts"], 1))).toEqual({
      text: "@b.ts and more",
      cursor: 6,
    });
  });

  it("moveSelection wraps around", () => {
    expect(moveSelection(menu(0, ["a", "b"]), -1).selected).toBe(1);
    expect(moveSelection(menu(0, ["a", "b"], 1), 1).selected).toBe(0);
  });
});
