import { describe, expect, test } from "vitest";
import { toolsFor } from "./index.js";

describe("toolsFor", () => {
  test("offers shell only when asked", () => {
    expect(toolsFor({ shell: false }).map((tool) => tool.name)).toEqual([
      "read_file",
      "list_dir",
      "search",
      "apply_patch",
    ]);
    expect(toolsFor({ shell: true }).map((tool) => tool.name)).toContain("shell");
  });

  test("what the model sees", () => {
    const shown = toolsFor({ shell: true }).map(({ name, description, parameters }) => ({
      name,
      description,
      parameters,
    }));
    expect(shown).toMatchSnapshot();
  });
});
