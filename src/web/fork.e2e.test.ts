import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { Script } from "../engine/scripted/scripted-engine.js";
import { launchChromium, screenshot } from "./test-support/browser.js";
import { startWebHarness, type WebHarness } from "./test-support/web-harness.js";

/** The answer names every user message the model was sent: the history it saw. */
const script: Script = (request) => ({
  text: `saw ${request.messages.flatMap((m) => (m.role === "user" ? [m.content] : [])).join("|")}`,
});

let browser: Browser;
let h: WebHarness;

beforeAll(async () => {
  browser = await launchChromium();
  h = await startWebHarness(browser, { files: {}, script, tokensPerSecond: 400 });
});

afterAll(async () => {
  await h?.[Symbol.asyncDispose]();
  await browser?.close();
});

test("fork in the web app: Fork on a middle turn opens a new session holding the turns up to it", async () => {
  const page = await h.open();
  await page.locator(".connection.is-open").waitFor();
  const prompt = page.getByRole("textbox", { name: "Message" });
  for (const [input, answer] of [
    ["one", "saw one"],
    ["two", "saw one|two"],
    ["three", "saw one|two|three"],
  ]) {
    await prompt.fill(input!);
    await prompt.press("Enter");
    await page.getByText(answer!, { exact: true }).waitFor();
  }
  // Each finished turn offers a fork.
  await expect(page.getByRole("button", { name: "Fork" }).count()).resolves.toBe(3);

  await page.locator(".entry-user").nth(1).getByRole("button", { name: "Fork" }).click();
  await page.locator('.session-open[aria-current="true"]', { hasText: "Fork of" }).waitFor();
  await page.getByText("saw one|two", { exact: true }).waitFor();
  await expect(page.getByText("saw one|two|three", { exact: true }).count()).resolves.toBe(0);
  await expect(page.locator(".entry-user").count()).resolves.toBe(2);
  await screenshot(page, "fork-opened");

  await prompt.fill("four");
  await prompt.press("Enter");
  await page.getByText("saw one|two|four", { exact: true }).waitFor();
  // The parent is still listed and holds its own turns.
  await page.locator(".session-open", { hasNotText: "Fork of" }).first().click();
  await page.getByText("saw one|two|three", { exact: true }).waitFor();
  await expect(page.getByText("saw one|two|four", { exact: true }).count()).resolves.toBe(0);
});
