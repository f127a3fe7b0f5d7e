import { describe, expect, test } from "vitest";
import { helpLines, parseSlashCommand } from "./slash-commands.js";

describe("parseSlashCommand", () => {
  test("commands with arguments, aliases, unknown commands and plain text", () => {
    expect(parseSlashCommand("/model  qwen-7b ")).toEqual({ name: "model", args: "qwen-7b" });
    expect(parseSlashCommand("/UNDO")).toEqual({ name: "undo", args: "" });
    expect(parseSlashCommand("/quit")).toEqual({ name: "exit", args: "" });
    expect(parseSlashCommand("/usr/bin is missing")).toEqual({ unknown: "/usr/bin" });
    expect(parseSlashCommand("fix the bug")).toBeNull();
    expect(parseSlashCommand("/cancel sub_1234")).toEqual({ name: "cancel", args: "sub_1234" });
    expect(parseSlashCommand("/MCP")).toEqual({ name: "mcp", args: "" });
  });

  test("help lists every command and the keys", () => {
    const help = helpLines().join("\n");
    for (const text of [
      "/help",
      "/undo",
      "/new",
      "/model [name]",
      "/skills",
      "/agents",
      "/cancel [id]",
      "/mcp",
      "/exit",
      "Esc",
      "Tab",
      "Ctrl+C",
    ])
      expect(help).toContain(text);
  });
});
