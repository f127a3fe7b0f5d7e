import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { emptyView } from "../../../src/client-core/thread-view.js";
import { launchChromium } from "../../../src/web/test-support/browser.js";
import type { FromWebview, ToWebview } from "./messages.js";

/**
 * The VS Code chat view's real script in Chromium, the extension played by the test: it answers
 * the view's `files` queries as the extension does (from the agent host's workspace.files).
 */

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
let browser: Browser;
let page: Page;

async function send(message: ToWebview): Promise<void> {
  await page.evaluate(
    (data) =>
      (globalThis as unknown as { postMessage(data: unknown, origin: string): void }).postMessage(data, "*"),
    message,
  );
}

/** What the view posted to the extension so far. */
function posted(): Promise<FromWebview[]> {
  return page.evaluate(() => (globalThis as unknown as { posted: FromWebview[] }).posted);
}

beforeAll(async () => {
  const bundle = await build({
    entryPoints: [here("./chat-app.ts")],
    bundle: true,
    write: false,
    platform: "browser",
    format: "iife",
    target: "es2022",
  });
  browser = await launchChromium();
  page = await browser.newPage();
  const css = await readFile(here("../../media/chat.css"), "utf8");
  const api =
    "globalThis.posted = []; globalThis.acquireVsCodeApi = () => ({ postMessage: (m) => posted.push(m) });";
  await page.setContent(
    `<style>${css}</style><div id="spark-chat-root"></div><script>${api}</script><script>${bundle.outputFiles[0]!.text}</script>`,
  );
  await send({ type: "snapshot", view: emptyView("thr_1"), connection: { status: "connected", detail: "" } });
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

test("the VS Code chat input: @ asks for matching files, lists the latest answer, Tab inserts the chosen one, Esc closes", async () => {
  const input = page.locator("#composer");
  await input.pressSequentially("explain @par");
  const queries = (await posted()).filter(
    (m): m is Extract<FromWebview, { type: "files" }> => m.type === "files",
  );
  expect(queries.map((q) => q.query)).toEqual(["", "p", "pa", "par"]);
  // An answer to an older query is ignored.
  await send({ type: "files", id: queries[1]!.id, files: ["stale.ts"] });
  await send({ type: "files", id: queries.at(-1)!.id, files: ["src/parser.ts", "src/compare.ts"] });
  const list = page.getByRole("listbox", { name: "Files" });
  await list.getByRole("option", { name: "@src/parser.ts", selected: true }).waitFor();
  await expect(list.getByRole("option").allTextContents()).resolves.toEqual([
    "@src/parser.ts",
    "@src/compare.ts",
  ]);
  await input.press("ArrowDown");
  await list.getByRole("option", { name: "@src/compare.ts", selected: true }).waitFor();
  await input.press("Tab");
  await expect(input.inputValue()).resolves.toBe("explain @src/compare.ts ");
  await expect(list.isHidden()).resolves.toBe(true);
  // Enter sends now that the picker is closed; nothing was sent while it was open.
  expect((await posted()).some((m) => m.type === "send")).toBe(false);

  await input.pressSequentially("@x");
  const last = (await posted()).filter((m) => m.type === "files").at(-1) as { id: number };
  await send({ type: "files", id: last.id, files: ["x.ts"] });
  await list.getByRole("option", { name: "@x.ts" }).waitFor();
  await input.press("Escape");
  await expect(list.isHidden()).resolves.toBe(true);
  await expect(input.inputValue()).resolves.toBe("explain @src/compare.ts @x");
});
