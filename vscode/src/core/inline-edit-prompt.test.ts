import { describe, expect, test } from "vitest";
import { inlineEditPrompt } from "./inline-edit-prompt.js";

describe("inline edit prompt", () => {
  test("the instruction first, then the file, the lines and the selected code", () => {
    const prompt = inlineEditPrompt({
      path: "src/greet.js",
      startLine: 3,
      endLine: 5,
      selection: "function greet(name) {\n  return name;\n}",
      instruction: "  rename greet to welcome ",
      languageId: "javascript",
    });
    expect(prompt).toBe(
      [
        "rename greet to welcome",
        "",
        "Edit src/greet.js, lines 3-5:",
        "```javascript",
        "function greet(name) {",
        "  return name;",
        "}",
        "```",
        "",
        "Make the smallest change that does this with apply_patch; leave the rest of the file as it is.",
      ].join("\n"),
    );
  });

  test("one line; a selection holding a fence gets a longer one", () => {
    const prompt = inlineEditPrompt({
      path: "README.md",
      startLine: 7,
      endLine: 7,
      selection: "```sh\nnpm test\n```\n",
      instruction: "use pnpm",
    });
    expect(prompt).toContain("Edit README.md, line 7:\n````\n```sh\nnpm test\n```\n````\n");
  });
});
