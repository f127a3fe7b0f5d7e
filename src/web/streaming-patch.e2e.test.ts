import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, expect, test } from "vitest";
import type { ScriptFileEntry } from "../cli/test-support/scripted-script.js";
import {
  startAttachedSpark,
  startScriptedServe,
  tmuxSession,
  type WorkspaceServe,
} from "../cli/test-support/spark-binary.js";
import { launchChromium, screenshot } from "./test-support/browser.js";

/**
 * An edit watched while the model writes it, on two faces of one session: the real `spark` in
 * tmux, attached to a real `spark serve` on the scripted engine, and the web app in Chromium. The
 * scripted model writes each `apply_patch` call a few tokens at a time, so both faces show the
 * patch growing; Esc in the terminal and a steer from the browser stop a patch being written, and
 * no part of it is applied.
 */

const term = tmuxSession(`spark-streaming-patch-${process.pid}`);
const { tmux, screen } = term;
const waitForScreen = (pattern: RegExp) => term.waitForScreen(pattern, 60_000);
const LINES = 30;

/** A file of numbered constants, and a patch that doubles each: 2 x LINES lines of diff. */
const original = (name: string) =>
  Array.from({ length: LINES }, (_, i) => `export const ${name}${i} = ${i};\n`).join("");
function doubling(file: string, name: string): string {
  const lines = ["*** Begin Patch", `*** Update File: ${file}`, "@@"];
  for (let i = 0; i < LINES; i++)
    lines.push(`-export const ${name}${i} = ${i};`, `+export const ${name}${i} = ${i} * 2;`);
  lines.push("*** End Patch");
  return JSON.stringify({ patch: lines.join("\n") });
}

const script: ScriptFileEntry[] = [
  {
    match: "double the values",
    toolCalls: [{ name: "apply_patch", arguments: doubling("src/app.ts", "v") }],
  },
  {
    match: "double the esc values",
    toolCalls: [{ name: "apply_patch", arguments: doubling("src/esc.ts", "e") }],
  },
  {
    match: "double the steer values",
    toolCalls: [{ name: "apply_patch", arguments: doubling("src/steer.ts", "s") }],
  },
  { match: "KEEP IT AS IT IS", text: "Leaving src/steer.ts alone." },
  { text: "Done." },
];

function typeInTerminal(text: string): void {
  tmux("send-keys", "-t", term.name, "-l", text);
  tmux("send-keys", "-t", term.name, "Enter");
}

/** Waits for a page locator; on failure says what and shows the terminal too. */
async function waitInBrowser(what: string, locator: ReturnType<Page["locator"]>): Promise<void> {
  try {
    await locator.waitFor({ timeout: 60_000 });
  } catch (error) {
    throw new Error(`The browser never showed ${what}: ${(error as Error).message}\nTerminal:\n${screen()}`);
  }
}

/**
 * Resolves once the browser shows the patch being written with line `shown` of it and not yet
 * `notYet`: one look at the page, so it proves a part of the patch was on screen.
 */
async function partialInBrowser(page: Page, shown: string, notYet: string): Promise<void> {
  try {
    await page.waitForFunction(
      ([shown, notYet]) => {
        // Runs in the page (this file is compiled without the DOM's types).
        type Found = ArrayLike<{ textContent: string | null }>;
        const { document } = globalThis as unknown as { document: { querySelectorAll(s: string): Found } };
        const text = Array.from(
          document.querySelectorAll(".tool-patch.tool-running"),
          (e) => e.textContent ?? "",
        );
        const added = Array.from(
          document.querySelectorAll(".tool-running tr.line-add"),
          (e) => e.textContent ?? "",
        );
        // Following the stream: the conversation is scrolled to its end, where the patch grows.
        type Scrolled = { scrollHeight: number; scrollTop: number; clientHeight: number };
        const log = (document as unknown as { querySelector(s: string): Scrolled }).querySelector(
          ".conversation",
        );
        return (
          log.scrollHeight - log.scrollTop - log.clientHeight < 40 &&
          text.some((part) => part.includes("writing")) &&
          added.some((row) => row.includes(shown)) &&
          !text.some((part) => part.includes(notYet))
        );
      },
      [shown, notYet] as const,
      { timeout: 60_000 },
    );
  } catch (error) {
    throw new Error(`The browser never showed ${shown} being written: ${(error as Error).message}`);
  }
}

/** Resolves once the terminal shows the patch being written with `shown` and not yet `notYet`. */
async function partialInTerminal(shown: string, notYet: string): Promise<string> {
  const text = await waitForScreen(new RegExp(`writing\\.\\.\\.[\\s\\S]*${shown.replace(/[*+.]/g, "\\$&")}`));
  expect(text).not.toContain(notYet);
  return text;
}

let serve: WorkspaceServe | null = null;
let browser: Browser | null = null;
afterAll(async () => {
  await browser?.close();
  term.kill();
  await serve?.stop();
});

test("a patch grows line by line in the terminal and the browser; Esc and a steer stop it unapplied", async () => {
  serve = await startScriptedServe(script, 20);
  const { repo, state } = serve;
  await mkdir(path.join(repo, "src"));
  for (const [file, name] of [
    ["app", "v"],
    ["esc", "e"],
    ["steer", "s"],
  ] as const)
    await writeFile(path.join(repo, `src/${file}.ts`), original(name));
  const read = (file: string) => readFile(path.join(repo, file), "utf8");

  browser = await launchChromium();
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await page.goto(`${state.url}/#key=${encodeURIComponent(state.key!)}`);
  await waitInBrowser("an open connection", page.locator(".connection.is-open"));
  startAttachedSpark(term, serve);
  await waitForScreen(/Ask Spark|\/help/);

  // 1. Watched to the end: a partial patch on both faces, nothing on disk yet, then the real diff.
  typeInTerminal("double the values");
  const listed = page.locator(".session-open", { hasText: "double the values" });
  await waitInBrowser("the terminal's session in the list", listed);
  await listed.click();
  const partial = await partialInTerminal("+export const v3 = 3 * 2;", "v29 = 29 * 2");
  expect(partial).toContain("• apply_patch src/app.ts");
  expect(partial).toContain("-export const v3 = 3;");
  await partialInBrowser(page, "export const v5 = 5 * 2;", "v29 = 29 * 2");
  await screenshot(page, "streaming-patch-01-writing");
  expect(await read("src/app.ts")).toBe(original("v"));
  // Applied: the real diff, numbered and reviewable, replaces the preview on both faces.
  await waitInBrowser("the applied diff", page.getByRole("button", { name: "Accept src/app.ts" }));
  await expect(page.locator(".tool-running").count()).resolves.toBe(0);
  await expect(page.locator(".diff-hunk").first().textContent()).resolves.toBe("@@ -1,30 +1,30 @@");
  const applied = await waitForScreen(/@@ -1,30 \+1,30 @@[\s\S]*Done\./);
  expect(applied).toContain("src/app.ts +30 -30");
  expect(await read("src/app.ts")).toContain("export const v29 = 29 * 2;");

  // 2. Esc in the terminal while the patch is being written: interrupted, nothing applied.
  typeInTerminal("double the esc values");
  await partialInTerminal("+export const e2 = 2 * 2;", "e29 = 29 * 2");
  tmux("send-keys", "-t", term.name, "Escape");
  await waitForScreen(/[Ii]nterrupted/);
  await waitInBrowser("the interruption", page.getByText("Interrupted."));
  await waitInBrowser("the stopped call", page.locator(".tool-failed", { hasText: "apply_patch" }));
  expect(await read("src/esc.ts")).toBe(original("e"));

  // 3. A steer from the browser while the patch is being written: the model goes on with it instead.
  typeInTerminal("double the steer values");
  await partialInBrowser(page, "export const s2 = 2 * 2;", "s29 = 29 * 2");
  // Scrolled up by the person, the conversation stays put while the patch grows below.
  const conversation = page.locator(".conversation");
  const scrollTop = () =>
    conversation.evaluate((element) => (element as unknown as { scrollTop: number }).scrollTop);
  // Only once the growing patch has scrolled the conversation is there anything to scroll back up.
  await page.waitForFunction(
    () =>
      (
        globalThis as unknown as { document: { querySelector(s: string): { scrollTop: number } } }
      ).document.querySelector(".conversation").scrollTop > 0,
  );
  // Read before the wheel: read after it, the scroll may already have happened, and the wait for a
  // smaller scrollTop would never end.
  const followed = await scrollTop();
  await conversation.hover();
  await page.mouse.wheel(0, -200);
  await page.waitForFunction(
    (top) =>
      (
        globalThis as unknown as { document: { querySelector(s: string): { scrollTop: number } } }
      ).document.querySelector(".conversation").scrollTop < top,
    followed,
  );
  const kept = await scrollTop();
  await waitInBrowser(
    "more of the patch",
    page.locator(".tool-running tr.line-add", { hasText: "s9 = 9 * 2" }),
  );
  expect(await scrollTop()).toBe(kept);
  const prompt = page.getByRole("textbox", { name: "Message" });
  await prompt.fill("KEEP IT AS IT IS");
  await prompt.press("Enter");
  await waitForScreen(/Leaving src\/steer\.ts alone\./);
  await waitInBrowser("the steer's answer", page.getByText("Leaving src/steer.ts alone."));
  await screenshot(page, "streaming-patch-02-steered");
  expect(await read("src/steer.ts")).toBe(original("s"));
}, 240_000);
