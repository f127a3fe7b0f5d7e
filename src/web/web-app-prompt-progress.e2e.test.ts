import type { Browser } from "playwright-core";
import { afterAll, beforeAll, test } from "vitest";
import { launchChromium, screenshot } from "./test-support/browser.js";
import { startWebHarness, type WebHarness } from "./test-support/web-harness.js";

let browser: Browser;
let h: WebHarness;

beforeAll(async () => {
  browser = await launchChromium();
  h = await startWebHarness(browser, { files: {}, tokensPerSecond: 200, script: () => ({ text: "Hi." }) });
});

afterAll(async () => {
  await h?.[Symbol.asyncDispose]();
  await browser?.close();
});

// The app said "starting" for half a minute while the server evaluated the agent prompt.
test("the top bar says how far the agent prompt's evaluation is, and nothing once it is done", async () => {
  const page = await h.open();
  await page.locator(".connection.is-open").waitFor();
  const status = page.locator(".model-load");
  h.stack.host.showPromptProgress({ evaluated: 1200, total: 2700, done: false });
  await status.getByText("Preparing the agent prompt 44% (1,200/2,700 tokens)…").waitFor();
  await screenshot(page, "preparing-agent-prompt");
  h.stack.host.showPromptProgress({ evaluated: 2700, total: 2700, done: true });
  await status.waitFor({ state: "detached" });
});
