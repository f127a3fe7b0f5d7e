import { access, readdir } from "node:fs/promises";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Script } from "../engine/scripted/scripted-engine.js";
import { launchChromium, screenshot } from "./test-support/browser.js";
import { startWebHarness, type WebHarness } from "./test-support/web-harness.js";

const WORDS = Array.from({ length: 200 }, (_, i) => `word${i}`).join(" ");
const MARKDOWN = [
  "Here is the **plan**, with `parseRow` fixed:",
  "",
  "1. Read the file",
  "2. Patch it",
  "",
  "```ts",
  "// keep the last field",
  "export function parseRow(line: string): string[] {",
  '  return line.split(",").map((field) => field.trim());',
  "}",
  "```",
].join("\n");
const APP_TS = 'export const port = 8080;\nexport const host = "localhost";\n';

function patchOf(lines: string[]): string {
  return JSON.stringify({ patch: ["*** Begin Patch", ...lines, "*** End Patch"].join("\n") });
}

/** What the scripted model answers, by the last user message. */
const script: Script = (request) => {
  const last = request.messages.at(-1);
  if (last?.role !== "user") return { text: "Done." };
  const text = last.content;
  if (text === "patch please") {
    const edit = patchOf([
      "*** Update File: src/app.ts",
      "@@",
      "-export const port = 8080;",
      "+export const port = 9090;",
      "*** Add File: notes.md",
      "+# Notes",
      "+The port moved.",
    ]);
    return { text: "Changing the port.", toolCalls: [{ name: "apply_patch", arguments: edit }] };
  }
  if (text === "patch again") {
    const edit = patchOf([
      "*** Update File: src/app.ts",
      "@@",
      "-export const port = 9090;",
      "+export const port = 7070;",
    ]);
    return { toolCalls: [{ name: "apply_patch", arguments: edit }] };
  }
  if (text === "break the types") {
    const edit = patchOf(["*** Add File: src/typed.ts", '+export const retries: number = "three";']);
    return { toolCalls: [{ name: "apply_patch", arguments: edit }] };
  }
  if (text === "run the tests") {
    return { toolCalls: [{ name: "shell", arguments: JSON.stringify({ command: "echo approved-run" }) }] };
  }
  if (text === "markdown") return { text: MARKDOWN };
  if (text.startsWith("long")) return { text: `You said: ${WORDS}` };
  return { text: `You said: ${text}` };
};

let browser: Browser;
let h: WebHarness;

beforeAll(async () => {
  browser = await launchChromium();
  h = await startWebHarness(browser, { files: { "src/app.ts": APP_TS }, script, tokensPerSecond: 80 });
});

afterAll(async () => {
  await h?.[Symbol.asyncDispose]();
  await browser?.close();
});

const prompt = (page: Page) => page.getByRole("textbox", { name: "Message" });
const agentMessages = (page: Page) => page.locator(".entry-agent");
const idle = (page: Page) =>
  page.locator(".meter:not(.context-meter):not(.is-live):not(.is-empty)").waitFor();

async function send(page: Page, text: string): Promise<void> {
  await prompt(page).fill(text);
  await prompt(page).press("Enter");
}

async function connected(page: Page): Promise<void> {
  await page.locator(".connection.is-open").waitFor();
}

describe("the web app in a real browser (scripted engine)", () => {
  test("a prompt streams in as Markdown with highlighted code; meter, model and chart show", async () => {
    const page = await h.open({ dark: true });
    await connected(page);
    await send(page, "markdown");
    await page.locator(".entry-agent .code .tok-keyword").first().waitFor();
    await idle(page);
    await expect(page.locator(".entry-user").first().textContent()).resolves.toBe("markdown");
    await expect(page.locator(".entry-agent strong").textContent()).resolves.toBe("plan");
    await expect(page.locator(".entry-agent ol li").count()).resolves.toBe(2);
    await expect(page.locator(".entry-agent .tok-comment").textContent()).resolves.toBe(
      "// keep the last field",
    );
    await expect(page.locator(".model-name").textContent()).resolves.toBe("scripted");
    await expect(page.locator(".tier").textContent()).resolves.toContain("tier");
    await expect(page.locator('[data-meter="speed"]').textContent()).resolves.toMatch(/tok\/s/);
    await send(page, "second turn");
    await page.getByText("You said: second turn").waitFor();
    await idle(page);
    await expect(page.locator(".chart rect.bar-ttft").count()).resolves.toBe(2);
    await expect(page.locator(".session-title").first().textContent()).resolves.toBe("markdown");
    await screenshot(page, "01-markdown-meter-chart");
  });

  test("Stop (and Esc) interrupt a streaming turn at once; the input stays live", async () => {
    const page = await h.open();
    await connected(page);
    await send(page, "long one");
    await page.getByText("You said: word0 word1 word2").waitFor();
    await screenshot(page, "02-streaming");
    await page.getByRole("button", { name: "Stop" }).click();
    await page.getByText("Interrupted.").waitFor();
    const cut = await agentMessages(page).last().textContent();
    expect(cut).not.toContain("word199");
    await page.waitForTimeout(300);
    expect(await agentMessages(page).last().textContent()).toBe(cut);

    await send(page, "long two");
    await page
      .getByText(/You said: word0 word1 word2/)
      .nth(1)
      .waitFor();
    await page.keyboard.press("Escape");
    await page.getByText("Interrupted.").nth(1).waitFor();
    await screenshot(page, "03-stopped");
  });

  test("Enter steers the running turn; Tab queues a message, shown as queued until it runs", async () => {
    const page = await h.open();
    await connected(page);
    await send(page, "long steer");
    await page.getByText("You said: word0 word1").waitFor();
    await prompt(page).fill("after it");
    await prompt(page).press("Tab");
    await page.locator(".queued-message", { hasText: "after it" }).waitFor();
    await send(page, "shorter please");
    await page.locator(".entry-user .badge-steer").waitFor();
    await page.getByText("You said: shorter please").waitFor();
    await screenshot(page, "04-steered-and-queued");
    await page.getByText("You said: after it").waitFor();
    await expect(page.locator(".queued-message").count()).resolves.toBe(0);
    const texts = await agentMessages(page).allInnerTexts();
    expect(texts.at(-2)).toBe("You said: shorter please");
    expect(texts[0]).not.toContain("word199");
  });

  test("patches: side-by-side diff, Accept keeps a file, Reject restores it, Undo reverts", async () => {
    const page = await h.open({ width: 1400, height: 900 });
    await connected(page);
    await send(page, "patch please");
    const app = page.locator('.diff-file[data-path="src/app.ts"]');
    const notes = page.locator('.diff-file[data-path="notes.md"]');
    // The patch shows while it is written; reviewable once it is applied.
    await page.getByRole("button", { name: "Accept src/app.ts" }).waitFor();
    expect(await h.read("src/app.ts")).toContain("9090");
    expect(await h.read("notes.md")).toBe("# Notes\nThe port moved.\n");
    await page.getByRole("button", { name: "Side by side" }).click();
    await page.locator(".diff-table.split").first().waitFor();
    await idle(page);
    await screenshot(page, "05-patch-side-by-side");

    await page.getByRole("button", { name: "Accept src/app.ts" }).click();
    await app.locator(".badge-accepted").waitFor();
    await page.getByRole("button", { name: /Reject notes\.md/ }).click();
    await notes.locator(".badge-rejected").waitFor();
    expect(await h.read("src/app.ts")).toContain("port = 9090");
    await expect(access(path.join(h.repo, "notes.md"))).rejects.toThrow();
    await screenshot(page, "06-accepted-rejected");

    await page.getByRole("button", { name: "Unified" }).click();
    await send(page, "patch again");
    await page.getByRole("button", { name: "Accept src/app.ts" }).waitFor();
    await idle(page);
    expect(await h.read("src/app.ts")).toContain("port = 7070");
    await page.getByRole("button", { name: "Undo" }).click();
    await page.getByText("Undone: src/app.ts").waitFor();
    await page.locator(".diff-file .badge-undone").waitFor();
    expect(await h.read("src/app.ts")).toBe(APP_TS.replace("8080", "9090"));
    await screenshot(page, "07-undone");
  });

  test("the errors an edit introduced show under its diff", async () => {
    const page = await h.open();
    await connected(page);
    await send(page, "break the types");
    // The language server started with the previous test's edits of src/app.ts.
    const error = page.locator(".tool-patch .diagnostics li");
    await error.waitFor();
    expect(await error.textContent()).toBe(
      "src/typed.ts:1:14 Type 'string' is not assignable to type 'number'. (2322)",
    );
    await screenshot(page, "07b-diagnostics");
  });

  test("a command waits for Approve / Deny", async () => {
    const page = await h.open();
    await connected(page);
    await send(page, "run the tests");
    const approval = page.getByRole("alertdialog", { name: "Command approval" });
    await approval.waitFor();
    await expect(approval.textContent()).resolves.toContain("echo approved-run");
    await expect(approval.textContent()).resolves.toContain("sandboxed: workspace, no network");
    await screenshot(page, "08-approval");
    await approval.getByRole("button", { name: "Approve" }).click();
    await page.locator(".command-output", { hasText: "approved-run" }).waitFor();
    await page.getByText("Approved: $ echo approved-run").waitFor();
    await idle(page);
  });

  test("a dropped connection is shown, comes back by itself and the text continues without gaps or repeats", async () => {
    const page = await h.open();
    await connected(page);
    await send(page, "long reconnect");
    await page.getByText("You said: word0 word1 word2").waitFor();
    h.proxy.cut();
    await page.locator(".connection.is-reconnecting").waitFor();
    await screenshot(page, "09-reconnecting");
    await page.waitForTimeout(700);
    h.proxy.restore();
    await connected(page);
    await idle(page);
    const texts = await agentMessages(page).allInnerTexts();
    expect(texts).toHaveLength(1);
    expect(texts[0]).toBe(`You said: ${WORDS}`);
    await screenshot(page, "10-reconnected");

    // A reload resumes the thread from the address: the same conversation, once.
    await page.reload();
    await connected(page);
    await page.getByText(`You said: ${WORDS}`).waitFor();
    expect(await agentMessages(page).allInnerTexts()).toEqual([`You said: ${WORDS}`]);
  });

  test("sessions: new, rename, open an older one, delete (the transcripts on disk follow)", async () => {
    const page = await h.open();
    await connected(page);
    await send(page, "first session");
    await page.getByText("You said: first session").waitFor();
    await idle(page);
    await page.getByRole("button", { name: "New session" }).click();
    await page.locator(".empty", { hasText: "Ask Spark" }).waitFor();
    await send(page, "second session");
    await page.getByText("You said: second session").waitFor();
    await idle(page);
    await page.getByRole("button", { name: "Rename second session" }).click();
    await page.getByRole("textbox", { name: "New title" }).fill("Renamed one");
    await page.getByRole("textbox", { name: "New title" }).press("Enter");
    await page.locator(".title", { hasText: "Renamed one" }).waitFor();
    await page.locator(".session-title", { hasText: "Renamed one" }).waitFor();

    await page.locator(".session-open", { hasText: "first session" }).click();
    await page.getByText("You said: first session").waitFor();
    await screenshot(page, "11-sessions");
    const before = await readdir(h.sessions);
    await page.getByRole("button", { name: "Delete first session" }).click();
    await page.locator(".session .button.reject", { hasText: "Delete" }).click();
    await page.locator(".session-title", { hasText: "first session" }).waitFor({ state: "detached" });
    expect((await readdir(h.sessions)).length).toBe(before.length - 1);
  });

  test("works with the keyboard alone and on a narrow window", async () => {
    const page = await h.open({ width: 390, height: 780 });
    await connected(page);
    // The input has focus on load: type, Enter, then Esc stops.
    await page.keyboard.type("long keyboard");
    await page.keyboard.press("Enter");
    await page.getByText("You said: word0 word1").waitFor();
    await page.keyboard.press("Escape");
    await page.getByText("Interrupted.").waitFor();
    await expect(page.locator(".sidebar").isVisible()).resolves.toBe(false);
    await screenshot(page, "12-narrow");
    // Tab moves through the buttons with a visible focus ring, and opens the session list.
    await page.getByRole("button", { name: "Sessions" }).focus();
    await page.keyboard.press("Enter");
    await page.getByRole("button", { name: "New session" }).waitFor();
    await page.getByRole("button", { name: "New session" }).focus();
    await screenshot(page, "13-narrow-sessions-focus");
    const outline = await page.evaluate("getComputedStyle(document.activeElement).outlineStyle");
    expect(outline).toBe("solid");
    await page.keyboard.press("Escape");
    await expect(page.locator(".sidebar").isVisible()).resolves.toBe(false);
  });
});

describe("the web app with an API key", () => {
  test("the key in the address fragment opens the socket; without it the page says what is missing", async () => {
    await using keyed = await startWebHarness(browser, {
      files: {},
      script,
      tokensPerSecond: 0,
      apiKeys: ["s3cret key/+="],
    });
    expect(keyed.appUrl).toMatch(/#key=s3cret%20key%2F%2B%3D$/);
    const page = await keyed.open();
    await connected(page);
    expect(page.url()).not.toContain("key=");
    await send(page, "hello with a key");
    await page.getByText("You said: hello with a key").waitFor();

    const bare = await keyed.open({ url: keyed.appUrl.replace(/#.*/, "") });
    await bare.getByText("The server needs an API key").waitFor();
    await screenshot(bare, "14-api-key-missing");
  });
});
