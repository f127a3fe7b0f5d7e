import { describe, expect, test } from "vitest";
import { toolsFor } from "./index.js";

describe("toolsFor", () => {
  test("lists shell always, and delegate only where sub-agents can run", () => {
    const core = ["read_file", "list_dir", "search", "apply_patch", "shell"];
    expect(toolsFor().map((tool) => tool.name)).toEqual(core);
    expect(toolsFor({ delegate: true }).map((tool) => tool.name)).toEqual([...core, "delegate"]);
  });

  test("what the model sees", () => {
    const shown = toolsFor({ delegate: true }).map(({ name, description, parameters }) => ({
      name,
      description,
      parameters,
    }));
    expect(shown).toMatchSnapshot();
  });
});
