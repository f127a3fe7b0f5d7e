import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { Script } from "../engine/scripted/scripted-engine.js";
import { launchChromium, screenshot } from "./test-support/browser.js";
import { startWebHarness, type WebHarness } from "./test-support/web-harness.js";

const LONG = Array.from({ length: 400 }, (_, i) => `w${i}`).join(" ");

/** A long answer to "long", a short one to anything else. */
const script: Script = (request) => {
  const last = request.messages.at(-1);
  return { text: last?.role === "user" && last.content.startsWith("long") ? LONG : "Noted." };
};

let browser: Browser;
let h: WebHarness;

beforeAll(async () => {
  browser = await launchChromium();
  h = await startWebHarness(browser, { files: {}, script, tokensPerSecond: 0 });
});

afterAll(async () => {
  await h?.[Symbol.asyncDispose]();
  await browser?.close();
});

test("the web app shows the context meter from the agent's numbers, and /compact says what it freed", async () => {
  const page = await h.open();
  await page.locator(".connection.is-open").waitFor();
  const meter = page.locator("[data-meter=context]");
  const prompt = page.getByRole("textbox", { name: "Message" });
  const send = async (text: string) => {
    await prompt.fill(text);
    await prompt.press("Enter");
  };
  await send("first: answer briefly");
  await page.getByText("Noted.").first().waitFor();
  // USED/WINDOW PERCENT: the window is the runtime's budget for this server (128K unless it says).
  await expect.poll(() => meter.textContent()).toMatch(/^\d+\/128K 0%$/);
  await send("long answer please");
  await page.getByText(/w399/).waitFor();
  await send("short");
  await page.getByText("Noted.").nth(1).waitFor();
  await expect.poll(() => meter.textContent()).toMatch(/^[1-9]\d\d\/128K 0%$/);
  const before = Number((await meter.textContent())!.split("/")[0]);

  await send("/compact the parser");
  const notice = page.getByText(/^Context compacted: [\d,]+ -> [\d,]+ tokens\.$/);
  await notice.waitFor();
  const [, from, to] = /([\d,]+) -> ([\d,]+)/.exec((await notice.textContent())!)!;
  expect(Number(from!.replaceAll(",", ""))).toBe(before);
  await expect.poll(() => meter.textContent()).toBe(`${to!.replaceAll(",", "")}/128K 0%`);
  // Nothing reached the model: /compact is no message.
  await expect(page.locator(".entry-user").count()).resolves.toBe(3);
  await screenshot(page, "context-meter-compacted");
});
