import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { Script } from "../engine/scripted/scripted-engine.js";
import { launchChromium, screenshot } from "./test-support/browser.js";
import { startWebHarness, type WebHarness } from "./test-support/web-harness.js";

const APP_TS = "export const port = 8080;\n";
const PATCH = [
  "*** Begin Patch",
  "*** Update File: src/app.ts",
  "@@",
  "-export const port = 8080;",
  "+export const port = 9090;",
  "*** End Patch",
].join("\n");

/** Asked to change the port, the model edits; refused, it answers with a plan. */
const script: Script = (request) => {
  const last = request.messages.at(-1);
  if (last?.role === "tool")
    return {
      text: last.content.startsWith("Not run: plan mode")
        ? "Plan: 1. Set port to 9090 in src/app.ts."
        : "Implemented.",
    };
  return { toolCalls: [{ name: "apply_patch", arguments: JSON.stringify({ patch: PATCH }) }] };
};

let browser: Browser;
let h: WebHarness;

beforeAll(async () => {
  browser = await launchChromium();
  h = await startWebHarness(browser, { files: { "src/app.ts": APP_TS }, script, tokensPerSecond: 200 });
});

afterAll(async () => {
  await h?.[Symbol.asyncDispose]();
  await browser?.close();
});

test("plan mode in the web app: toggle it, get a plan with nothing changed, Implement carries it out", async () => {
  const page = await h.open();
  await page.locator(".connection.is-open").waitFor();
  const toggle = page.getByRole("button", { name: "Plan", exact: true });
  await page.getByRole("button", { name: "Plan", exact: true, pressed: false }).waitFor();
  await toggle.click();
  await page.getByRole("button", { name: "Plan", exact: true, pressed: true }).waitFor();

  const prompt = page.getByRole("textbox", { name: "Message" });
  await prompt.fill("make the port 9090");
  await prompt.press("Enter");
  await page.getByText("Plan: 1. Set port to 9090 in src/app.ts.").waitFor();
  const implement = page.getByRole("button", { name: "Implement" });
  await implement.waitFor();
  expect(await h.read("src/app.ts")).toBe(APP_TS);
  await expect(page.locator(".entry-user .badge-plan").count()).resolves.toBe(1);
  await expect(page.locator(".entry-tool").first().textContent()).resolves.toContain("plan mode is on");
  await screenshot(page, "plan-mode-plan");

  await implement.click();
  await page.getByText("Implemented.").waitFor();
  expect(await h.read("src/app.ts")).toBe("export const port = 9090;\n");
  await page.getByRole("button", { name: "Plan", exact: true, pressed: false }).waitFor();
  await expect(page.locator(".entry-user").last().textContent()).resolves.toBe("Implement the plan above.");
  await expect(page.locator(".entry-user .badge-plan").count()).resolves.toBe(1);
  await expect(implement.count()).resolves.toBe(0);
  await screenshot(page, "plan-mode-implemented");
});
