import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { plantBug, plantedBugFinding, reviewScript } from "../runtime/review/test-support/planted-bug.js";
import { launchChromium, screenshot } from "./test-support/browser.js";
import { startWebHarness, type WebHarness } from "./test-support/web-harness.js";

const finding = plantedBugFinding("sum.ts");

/** The review finds the planted bug; anything else gets "ok". */
const script = reviewScript([finding]);

let browser: Browser;
let h: WebHarness;

beforeAll(async () => {
  browser = await launchChromium();
  h = await startWebHarness(browser, { files: {}, script, tokensPerSecond: 2000 });
  await plantBug(h.repo, "sum.ts");
});

afterAll(async () => {
  await h?.[Symbol.asyncDispose]();
  await browser?.close();
});

test("/review in the web app's message box reviews the session's workspace and lists each finding by file:lines, severity, title and explanation", async () => {
  const page = await h.open();
  await page.locator(".connection.is-open").waitFor();
  const prompt = page.getByRole("textbox", { name: "Message" });
  await prompt.fill("hi");
  await prompt.press("Enter");
  await page.getByText("ok", { exact: true }).waitFor();

  await prompt.fill("/review");
  await prompt.press("Enter");
  const panel = page.getByRole("region", { name: "Review" });
  await panel.getByText("Review of uncommitted changes (1 finding)").waitFor();
  const item = panel.getByRole("listitem");
  await expect(item.textContent()).resolves.toBe(
    "sum.ts:3 error Off-by-one in the loop bound" + "i <= xs.length reads past the end.",
  );
  await screenshot(page, "review-findings");
  // The review took no turn of the session: its conversation is as it was.
  await expect(page.locator(".conversation").getByText("/review").count()).resolves.toBe(0);

  // Arguments the host would refuse never leave the app: the error says how to use it.
  await prompt.fill("/review --base --upload-pack=x");
  await prompt.press("Enter");
  await page.getByRole("alert").getByText("'--upload-pack=x' is not a branch, tag or commit").waitFor();

  await panel.getByRole("button", { name: "Close review" }).click();
  await panel.waitFor({ state: "detached" });
});
