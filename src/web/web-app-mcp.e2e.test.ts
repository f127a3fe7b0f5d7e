import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { MemoryMcpServerList, mcpServer } from "../host/test-support/memory-mcp-server-list.js";
import { launchChromium, screenshot } from "./test-support/browser.js";
import { startWebHarness, type WebHarness } from "./test-support/web-harness.js";

let browser: Browser;
let h: WebHarness;
const list = new MemoryMcpServerList([
  mcpServer(),
  mcpServer({ name: "docs", state: "starting", transport: "http", tools: [], trusted: true }),
]);

beforeAll(async () => {
  browser = await launchChromium();
  h = await startWebHarness(browser, {
    files: {},
    script: () => ({ text: "ok" }),
    tokensPerSecond: 100,
    mcp: list,
  });
});

afterAll(async () => {
  await h?.[Symbol.asyncDispose]();
  await browser?.close();
});

describe("the web app's MCP servers panel (real browser, agent host listing servers)", () => {
  test("lists each server with its state, tools on demand, and follows a failure live", async () => {
    const page = await h.open();
    const panel = page.getByRole("region", { name: "MCP servers" });
    await panel.getByRole("img", { name: "docs: starting" }).waitFor();
    await expect(panel.getByRole("img", { name: "everything: ready" }).textContent()).resolves.toBe("ready");
    await expect(panel.locator(".mcp-server-detail").first().textContent()).resolves.toBe(
      "stdio · user config · asks before each call",
    );
    const tools = panel.getByRole("list", { name: "Tools of everything" });
    await expect(tools.isVisible()).resolves.toBe(false);
    await panel.getByText("2 tools").click();
    await expect(tools.getByRole("listitem").allTextContents()).resolves.toEqual([
      "mcp__everything__echo",
      "mcp__everything__get-sum",
    ]);

    list.update("docs", { state: "failed", error: "connection refused (http://127.0.0.1:9/mcp)" });
    await panel.getByRole("img", { name: "docs: failed" }).waitFor();
    await expect(panel.locator(".mcp-server.is-failed .mcp-server-error").textContent()).resolves.toBe(
      "connection refused (http://127.0.0.1:9/mcp)",
    );
    await screenshot(page, "mcp-servers-panel");
  });
});
