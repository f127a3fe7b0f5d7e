import { describe, expect, test } from "vitest";
import { toolsFor } from "./index.js";

describe("toolsFor", () => {
  test("lists shell always, and delegate only where sub-agents can run", () => {
    const core = ["read_file", "list_dir", "search", "apply_patch", "shell"];
    expect(toolsFor().map((tool) => tool.name)).toEqual(core);
    expect(toolsFor({ delegate: true }).map((tool) => tool.name)).toEqual([...core, "delegate"]);
  });

  test("lists load_skill only where the session has skills, before delegate", () => {
    expect(toolsFor({ skills: true, delegate: true }).map((tool) => tool.name)).toEqual([
      "read_file",
      "list_dir",
      "search",
      "apply_patch",
      "shell",
      "load_skill",
      "delegate",
    ]);
  });

  test("what the model sees", () => {
    const shown = toolsFor({ delegate: true, skills: true }).map(({ name, description, parameters }) => ({
      name,
      description,
      parameters,
    }));
    expect(shown).toMatchSnapshot();
  });
});
