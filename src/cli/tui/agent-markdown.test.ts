import { describe, expect, test } from "vitest";
import { fenceOpenAfter, styleAgentText } from "./agent-markdown.js";

describe("styleAgentText", () => {
  test("inline code, bold and headings; code blocks left as they are", () => {
    const { lines, inFence } = styleAgentText(
      "# Title\nUse `npm test` **now**.\n```\nconst `x` = **1**;\n```",
      false,
    );
    expect(lines).toEqual([
      [{ text: "Title", style: "bold" }],
      [
        { text: "Use " },
        { text: "npm test", style: "code" },
        { text: " " },
        { text: "now", style: "bold" },
        { text: "." },
      ],
      [{ text: "```", style: "dim" }],
      [{ text: "const `x` = **1**;" }],
      [{ text: "```", style: "dim" }],
    ]);
    expect(inFence).toBe(false);
  });

  test("text that starts inside a code block is not styled until the block closes", () => {
    expect(styleAgentText("a **b**\n```\nc", true).lines[0]).toEqual([{ text: "a **b**" }]);
    expect(fenceOpenAfter("x\n```ts\ny", false)).toBe(true);
  });
});
