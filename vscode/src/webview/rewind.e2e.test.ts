import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { emptyView } from "../../../src/client-core/thread-view.js";
import type { ThreadEvent } from "../../../src/protocol/agent.js";
import { launchChromium, waitForValue } from "../../../src/web/test-support/browser.js";
import type { FromWebview, ToWebview } from "./messages.js";

/**
 * The VS Code chat view's rewind, in Chromium: its real script bundled as the extension bundles it;
 * the extension's side is played by posting its messages and reading what the view posts.
 */

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
let browser: Browser;
let page: Page;
let seq = 0;

async function send(message: ToWebview): Promise<void> {
  await page.evaluate(
    (data) =>
      (globalThis as unknown as { postMessage(data: unknown, origin: string): void }).postMessage(data, "*"),
    message,
  );
}

async function post(...events: ThreadEvent[]): Promise<void> {
  await send({
    type: "actions",
    actions: events.map((event) => ({
      action: { ...event, thread_id: "thr_1", seq: seq++, epoch: "ep" },
      at: 0,
    })),
  });
}

const posted = () =>
  page.evaluate(() =>
    (globalThis as unknown as { posted: FromWebview[] }).posted.filter((m) => m.type === "rewind"),
  );

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

test("the VS Code chat: Rewind on a message offers code, conversation or both; the rewound view and message follow", async () => {
  await post(
    { type: "item.completed", turn_id: "t1", item: { type: "user_message", id: "u1", text: "first" } },
    { type: "item.completed", turn_id: "t1", item: { type: "agent_message", id: "m1", text: "one" } },
    { type: "item.completed", turn_id: "t2", item: { type: "user_message", id: "u2", text: "second" } },
    { type: "item.completed", turn_id: "t2", item: { type: "agent_message", id: "m2", text: "two" } },
  );
  const second = page.locator(".entry.user").nth(1);
  await second.getByRole("button", { name: "Rewind" }).click();
  // Cancel closes the choices and sends nothing.
  await second.getByRole("button", { name: "Cancel" }).click();
  await second.getByRole("button", { name: "Rewind" }).waitFor();
  await second.getByRole("button", { name: "Rewind" }).click();
  await second.getByRole("button", { name: "Conversation only" }).click();
  expect(await posted()).toEqual([{ type: "rewind", itemId: "u2", restore: "conversation" }]);

  // The host's answer: the entries from the message on go, a notice says so, the text comes back.
  await post({ type: "thread.rewound", item_id: "u2", restore: "conversation", paths: [], text: "second" });
  await send({ type: "refill", text: "second" });
  await page.getByText('Rewound the conversation to before "second".').waitFor();
  await expect(page.locator(".entry.user").count()).resolves.toBe(1);
  await expect(page.locator(".entry.agent").allTextContents()).resolves.toEqual(["one"]);
  await waitForValue(page.locator("#composer"), "second");
});
