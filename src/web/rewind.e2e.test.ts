import { writeFile } from "node:fs/promises";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { Script } from "../engine/scripted/scripted-engine.js";
import { launchChromium, screenshot, waitForValue } from "./test-support/browser.js";
import { startWebHarness, type WebHarness } from "./test-support/web-harness.js";

const patch = (from: string, to: string) =>
  JSON.stringify({
    patch: ["*** Begin Patch", "*** Update File: a.txt", "@@", `-${from}`, `+${to}`, "*** End Patch"].join(
      "\n",
    ),
  });

/** "make alpha": a.txt a -> alpha; "make beta": alpha -> beta; after a call, or otherwise, "Done." */
const script: Script = (request) => {
  const last = request.messages.at(-1);
  if (last?.role === "user" && last.content === "make alpha")
    return { toolCalls: [{ name: "apply_patch", arguments: patch("a", "alpha") }] };
  if (last?.role === "user" && last.content === "make beta")
    return { toolCalls: [{ name: "apply_patch", arguments: patch("alpha", "beta") }] };
  return { text: "Done." };
};

let browser: Browser;
let h: WebHarness;

beforeAll(async () => {
  browser = await launchChromium();
  h = await startWebHarness(browser, { files: { "a.txt": "a\n" }, script, tokensPerSecond: 400 });
});

afterAll(async () => {
  await h?.[Symbol.asyncDispose]();
  await browser?.close();
});

const prompt = (page: Page) => page.getByRole("textbox", { name: "Message" });
const users = (page: Page) => page.locator(".entry-user");

/** Opens the rewind choices of user message `index` and picks `choice`. */
async function rewind(page: Page, index: number, choice: string) {
  await users(page).nth(index).getByRole("button", { name: "Rewind to before this message" }).click();
  await users(page).nth(index).getByRole("button", { name: choice }).click();
}

test("rewind from the web app: code only, refused over a hand edit, then the conversation; every page follows", async () => {
  const page = await h.open();
  await page.locator(".connection.is-open").waitFor();
  for (const [input, done] of [
    ["make alpha", 1],
    ["make beta", 2],
  ] as const) {
    await prompt(page).fill(input);
    await prompt(page).press("Enter");
    await page
      .locator(".entry-agent", { hasText: "Done." })
      .nth(done - 1)
      .waitFor();
  }
  expect(await h.read("a.txt")).toBe("beta\n");
  // A second page on the same thread: it follows every rewind.
  const other = await h.open({ url: page.url() });
  await users(other).nth(1).waitFor();

  await rewind(page, 1, "Code only");
  await page.getByText('Rewound the code to before "make beta": restored a.txt.').waitFor();
  expect(await h.read("a.txt")).toBe("alpha\n");
  await other.getByText('Rewound the code to before "make beta": restored a.txt.').waitFor();
  await expect(users(page).count()).resolves.toBe(2);

  // The person edits the file: a code rewind over it is refused, naming it, and changes nothing.
  await writeFile(path.join(h.repo, "a.txt"), "by hand\n");
  await rewind(page, 0, "Code and conversation");
  await page.locator(".toast", { hasText: "a.txt changed since the agent edited it" }).waitFor();
  expect(await h.read("a.txt")).toBe("by hand\n");
  await expect(users(page).count()).resolves.toBe(2);
  await screenshot(page, "rewind-refused");

  await rewind(page, 0, "Conversation only");
  await page.getByText('Rewound the conversation to before "make alpha".').waitFor();
  await expect(users(page).count()).resolves.toBe(0);
  expect(await h.read("a.txt")).toBe("by hand\n");
  // The rewound message is back in the box, to edit and send again.
  await waitForValue(prompt(page), "make alpha");
  await other.getByText('Rewound the conversation to before "make alpha".').waitFor();
  await expect(users(other).count()).resolves.toBe(0);
  await screenshot(page, "rewind-conversation");
});
