import { describe, expect, test } from "vitest";
import { approvalFor } from "./approval.js";

describe("approvalFor", () => {
  const request = (command: string) => ({
    kind: "shell" as const,
    command,
    cwd: "/work",
    sandbox: "workspace-write" as const,
  });

  test("follows the policy", () => {
    expect(approvalFor(request("npm test"), "ask")).toBe("ask-user");
    expect(approvalFor(request("npm test"), "auto")).toBe("auto-approve");
  });

  test("an empty command is rejected under every policy", () => {
    expect(approvalFor(request(""), "auto")).toBe("reject");
    expect(approvalFor(request("  \n"), "ask")).toBe("reject");
  });

  const mcp = (trusted: boolean) => ({
    kind: "mcp" as const,
    server: "everything",
    tool: "get-sum",
    arguments: '{"a":1,"b":2}',
    trusted,
  });

  test("an MCP call asks unless its server is trusted or the policy is auto", () => {
    expect(approvalFor(mcp(false), "ask")).toBe("ask-user");
    expect(approvalFor(mcp(false), "auto")).toBe("auto-approve");
    expect(approvalFor(mcp(true), "ask")).toBe("auto-approve");
  });
});
