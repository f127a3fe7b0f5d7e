import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { launchChromium, screenshot } from "./test-support/browser.js";
import { startWebHarness, type WebHarness } from "./test-support/web-harness.js";

let browser: Browser;
let h: WebHarness;
const asked: string[] = [];

beforeAll(async () => {
  browser = await launchChromium();
  h = await startWebHarness(browser, {
    files: {
      ".agents/skills/pdf/SKILL.md": "---\nname: pdf\ndescription: Fill and read PDF forms.\n---\nBody.\n",
      ".agents/agents/reviewer.md":
        "---\nname: reviewer\ndescription: Reviews a diff.\ntools: [read_file, search]\n---\nReview.\n",
    },
    script: (request) => {
      asked.push(String(request.messages.at(-1)?.content ?? ""));
      return { text: "ok" };
    },
    tokensPerSecond: 100,
  });
});

afterAll(async () => {
  await h?.[Symbol.asyncDispose]();
  await browser?.close();
});

describe("the web app's /skills and /agents (real browser, the repository's catalog)", () => {
  test("list the skills and the defined agents above the composer, without asking the model", async () => {
    const page = await h.open();
    const input = page.getByRole("textbox", { name: "Message" });
    await input.fill("/skills");
    await input.press("Enter");
    const skills = page.getByRole("region", { name: "Skills" });
    await skills.getByText("Fill and read PDF forms.").waitFor();
    await expect(skills.locator(".catalog-name").allTextContents()).resolves.toContain("pdf");
    await expect(skills.locator(".catalog-meta").first().textContent()).resolves.toBe(
      "repository · .agents/skills/pdf/SKILL.md",
    );
    await screenshot(page, "skills-panel");
    await input.fill("/agents");
    await input.press("Enter");
    const agents = page.getByRole("region", { name: "Agents" });
    await agents.getByText("Reviews a diff.").waitFor();
    await expect(agents.locator(".catalog-meta").first().textContent()).resolves.toBe(
      "repository · tools: read_file, search",
    );
    await agents.getByRole("button", { name: "Close agents" }).click();
    await agents.waitFor({ state: "detached" });
    expect(asked).toEqual([]);
  });
});
