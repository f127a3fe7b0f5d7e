import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { Script } from "../engine/scripted/scripted-engine.js";
import { launchChromium, screenshot } from "./test-support/browser.js";
import { startWebHarness, type WebHarness } from "./test-support/web-harness.js";

const PATCH = [
  "*** Begin Patch",
  "*** Update File: NOTES.md",
  "@@",
  "-print 1",
  "+print 2",
  "*** End Patch",
].join("\n");

/** Answers "Saw the parser." only when the file's contents came with the message; "change it" edits. */
const script: Script = (request) => {
  const last = request.messages.at(-1);
  if (last?.role === "tool") return { text: "Changed." };
  const content = last?.role === "user" ? last.content : "";
  if (content === "change it")
    return { toolCalls: [{ name: "apply_patch", arguments: JSON.stringify({ patch: PATCH }) }] };
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
      // Not a .ts file: no language server is waited for after the edit.
      "NOTES.md": "print 1\n",
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

test("/diff in the web app's message box shows what the session changed, until closed", async () => {
  const page = await h.open();
  await page.locator(".connection.is-open").waitFor();
  const prompt = page.getByRole("textbox", { name: "Message" });
  await prompt.fill("change it");
  await prompt.press("Enter");
  await page.getByText("Changed.").waitFor();
  await prompt.fill("/diff");
  await prompt.press("Enter");
  const panel = page.getByRole("region", { name: "Session changes" });
  await panel.getByText("Session changes (1 file, +1 −1)").waitFor();
  await expect(panel.textContent()).resolves.toContain("print 2");
  await screenshot(page, "session-diff");
  await panel.getByRole("button", { name: "Close session changes" }).click();
  await panel.waitFor({ state: "detached" });
});
