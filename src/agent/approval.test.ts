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
});
