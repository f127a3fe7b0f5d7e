import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { launchChromium, screenshot } from "./test-support/browser.js";
import { startWebHarness, type WebHarness } from "./test-support/web-harness.js";

let browser: Browser;
let h: WebHarness;
let finishLoading = () => {};
const seen: string[] = [];

beforeAll(async () => {
  browser = await launchChromium();
  const loaded = new Promise<void>((resolve) => {
    finishLoading = resolve;
  });
  h = await startWebHarness(browser, {
    files: {},
    tokensPerSecond: 200,
    loaded,
    script: (request) => {
      const last = request.messages.at(-1);
      if (last?.role !== "user") return { text: "Done." };
      seen.push(last.content);
      return { text: `You said: ${last.content}` };
    },
  });
});

afterAll(async () => {
  finishLoading();
  await h?.[Symbol.asyncDispose]();
  await browser?.close();
});

test("while the model loads the app shows it and takes messages; each is answered once it is ready", async () => {
  h.stack.models.setProgress("scripted", 0.43);
  const page = await h.open();
  await page.locator(".connection.is-open").waitFor();
  const status = page.locator(".model-load");
  await status.getByText("Loading scripted 43%…").waitFor();

  const prompt = page.getByRole("textbox", { name: "Message" });
  for (const text of ["hello while loading", "and another"]) {
    await prompt.fill(text);
    await prompt.press("Enter");
  }
  const waiting = page.locator(".queued-message");
  await waiting.filter({ hasText: "and another" }).waitFor();
  expect(await waiting.allInnerTexts()).toEqual([
    "waiting for the model hello while loading",
    "waiting for the model and another",
  ]);
  await screenshot(page, "loading-model-queued");
  expect(seen).toEqual([]);

  finishLoading();
  const answers = page.locator(".entry-agent");
  await answers.filter({ hasText: "You said: and another" }).waitFor();
  await status.waitFor({ state: "detached" });
  expect(await answers.allInnerTexts()).toEqual(["You said: hello while loading", "You said: and another"]);
  expect(seen).toEqual(["hello while loading", "and another"]);
  await expect(waiting.count()).resolves.toBe(0);
  await screenshot(page, "loading-model-answered");
});
