import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { Script } from "../engine/scripted/scripted-engine.js";
import { launchChromium, screenshot } from "./test-support/browser.js";
import { startWebHarness, type WebHarness } from "./test-support/web-harness.js";

/** Answers "Saw the parser." only when the file's contents came with the message. */
const script: Script = (request) => {
  const last = request.messages.at(-1);
  const content = last?.role === "user" ? last.content : "";
  return { text: content.includes("PARSER-BODY") ? "Saw the parser." : "ok" };
};

let browser: Browser;
let h: WebHarness;

beforeAll(async () => {
  browser = await launchChromium();
  h = await startWebHarness(browser, {
    files: {
      "src/parser.ts": "export const parse = 'PARSER-BODY';\n",
      "src/printer.ts": "export const print = 1;\n",
      "README.md": "hello\n",
    },
    script,
    tokensPerSecond: 2000,
  });
});

afterAll(async () => {
  await h?.[Symbol.asyncDispose]();
  await browser?.close();
});

test("@ in the web app's message box lists the workspace's files that match, Tab inserts one, and its contents go with the message", async () => {
  const page = await h.open();
  await page.locator(".connection.is-open").waitFor();
  const prompt = page.getByRole("textbox", { name: "Message" });
  await prompt.fill("hi");
  await prompt.press("Enter");
  await page.getByText("ok", { exact: true }).waitFor();

  await prompt.pressSequentially("explain @prs");
  const files = page.getByRole("listbox", { name: "Files" });
  await files.getByRole("option", { name: "@src/parser.ts", selected: true }).waitFor();
  await expect(files.getByRole("option").allTextContents()).resolves.toEqual([
    "@src/parser.ts",
    "@src/printer.ts",
  ]);
  await screenshot(page, "mention-picker");
  await prompt.press("ArrowDown");
  await files.getByRole("option", { name: "@src/printer.ts", selected: true }).waitFor();
  await prompt.press("ArrowUp");
  await prompt.press("Tab");
  await expect(prompt.inputValue()).resolves.toBe("explain @src/parser.ts ");
  await files.waitFor({ state: "detached" });
  await prompt.press("Enter");
  await page.getByText("Saw the parser.").waitFor();

  // Esc closes the picker and leaves the text.
  await prompt.pressSequentially("@READ");
  await files.getByRole("option", { name: "@README.md" }).waitFor();
  await prompt.press("Escape");
  await files.waitFor({ state: "detached" });
  await expect(prompt.inputValue()).resolves.toBe("@READ");
});
