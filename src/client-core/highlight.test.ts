import { describe, expect, test } from "vitest";
import { highlight } from "./highlight.js";

const marked = (code: string, language: string) =>
  highlight(code, language)
    .filter((token) => token.kind !== "plain")
    .map((token) => [token.kind, token.text]);

describe("highlight", () => {
  test("keeps every character and finds the common tokens of TypeScript", () => {
    const code = 'const x = "a // b"; // note\nreturn 42;';
    const tokens = highlight(code, "ts");
    expect(tokens.map((t) => t.text).join("")).toBe(code);
    expect(marked(code, "ts")).toEqual([
      ["keyword", "const"],
      ["string", '"a // b"'],
      ["comment", "// note"],
      ["keyword", "return"],
      ["number", "42"],
    ]);
  });

  test("languages by name or alias: Python, shell, diff", () => {
    expect(marked("# c\nx = 'y'", "python")).toEqual([
      ["comment", "# c"],
      ["string", "'y'"],
    ]);
    expect(marked("# c\nx = 'y'", "py")).toEqual(marked("# c\nx = 'y'", "python"));
    expect(marked('echo "hi" # say', "sh")).toEqual([
      ["type", "echo"],
      ["string", '"hi"'],
      ["comment", "# say"],
    ]);
    expect(marked("@@ -1 +1 @@\n-a\n+b\n", "diff")).toEqual([
      ["meta", "@@ -1 +1 @@"],
      ["remove", "-a"],
      ["add", "+b"],
    ]);
  });

  test("an unknown or missing language, and text that is not code in it, stay plain and whole", () => {
    expect(highlight("fn main() {}", "brainfudge")).toEqual([{ kind: "plain", text: "fn main() {}" }]);
    expect(highlight("plain", "")).toEqual([{ kind: "plain", text: "plain" }]);
    expect(highlight("", "ts")).toEqual([]);
    const odd = '}}} ))) "unterminated';
    expect(
      highlight(odd, "json")
        .map((t) => t.text)
        .join(""),
    ).toBe(odd);
  });
});
