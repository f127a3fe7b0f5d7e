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
 * One live session, every face: the real `spark` in tmux attaches to a running `spark serve`, and
 * the web app in Chromium watches, steers, approves and interrupts the terminal's turns.
 */

const term = tmuxSession(`spark-terminal-browser-${process.pid}`);
const { tmux, screen } = term;
const session = term.name;
const waitForScreen = (pattern: RegExp) => term.waitForScreen(pattern, 30_000);
/** Long echoes, so each turn is still streaming when the other face acts. */
const words = (prefix: string) => Array.from({ length: 200 }, (_, i) => `${prefix}${i}`).join(" ");
const script: ScriptFileEntry[] = [
  {
    match: "run the tests",
    toolCalls: [{ name: "shell", arguments: JSON.stringify({ command: "echo approved-from-browser" }) }],
  },
];

function typeInTerminal(text: string): void {
  tmux("send-keys", "-t", session, "-l", text);
  tmux("send-keys", "-t", session, "Enter");
}

/** Waits for a page locator; on failure says what and shows the terminal too. */
async function waitInBrowser(
  what: string,
  locator: ReturnType<Page["locator"]>,
  timeout = 30_000,
): Promise<void> {
  try {
    await locator.waitFor({ timeout });
  } catch (error) {
    throw new Error(`The browser never showed ${what}: ${(error as Error).message}\nTerminal:\n${screen()}`);
  }
}

let serve: WorkspaceServe | null = null;
let browser: Browser | null = null;
afterAll(async () => {
  await browser?.close();
  term.kill();
  await serve?.stop();
});

test("a thread started in the terminal is watched, steered, approved and interrupted from the web app", async () => {
  serve = await startScriptedServe(script, 30);
  const { repo, state } = serve;
  expect(state.workspace).toBe(repo);
  expect(state.key).not.toBeNull();

  // The browser first, on the address with the key in its fragment (as `spark serve` prints it).
  browser = await launchChromium();
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  await page.goto(`${state.url}/#key=${encodeURIComponent(state.key!)}`);
  await waitInBrowser("an open connection", page.locator(".connection.is-open"));

  // Then the real `spark` in a terminal, in the same workspace: it attaches to that server.
  startAttachedSpark(term, serve);
  await waitForScreen(/Ask Spark|\/help/);
  typeInTerminal(`first ${words("word")}`);
  await waitForScreen(/You said: first word0 word1/);

  // The terminal's thread shows up in the open web app, and its text streams there live.
  const listed = page.locator(".session-open", { hasText: "first word0" });
  await waitInBrowser("the terminal's session in the list", listed);
  await listed.click();
  await waitInBrowser("the terminal's streamed text", page.getByText(/You said: first word0 word1/));
  await screenshot(page, "terminal-01-watching");

  // A steer typed in the browser while the turn runs changes what the terminal streams.
  const prompt = page.getByRole("textbox", { name: "Message" });
  await prompt.fill(`STEER FROM THE BROWSER ${words("steer")}`);
  await prompt.press("Enter");
  await waitForScreen(/You said: STEER FROM THE BROWSER steer0/);
  await waitInBrowser("the steer's echo", page.getByText(/You said: STEER FROM THE BROWSER steer0/));

  // The browser's Stop button stops the terminal's turn: both faces say so.
  await page.getByRole("button", { name: "Stop" }).click();
  const interrupted = await waitForScreen(/[Ii]nterrupted/);
  await waitInBrowser("the interruption", page.getByText("Interrupted."));
  // Both echoes stopped short: "word199" and "steer199" show only in the messages themselves.
  expect(interrupted.split("word199")).toHaveLength(2);
  expect(interrupted.split("steer199")).toHaveLength(2);

  // A command the terminal's turn asks for is approved in the browser; the terminal's prompt resolves.
  typeInTerminal("please run the tests");
  await waitForScreen(/Run this command\?[\s\S]*echo approved-from-browser/);
  const approval = page.getByRole("alertdialog", { name: "Command approval" });
  await waitInBrowser("the terminal's approval request", approval);
  await expect(approval.textContent()).resolves.toContain("echo approved-from-browser");
  await screenshot(page, "terminal-02-approval");
  await approval.getByRole("button", { name: "Approve" }).click();
  const approved = await waitForScreen(/Approved: \$ echo approved-from-browser/);
  expect(approved).not.toMatch(/Run this command\?/);
  await waitInBrowser(
    "the command's output",
    page.locator(".command-output", { hasText: "approved-from-browser" }),
  );
  // The command ran once, and its output is in the terminal too.
  await waitForScreen(/approved-from-browser[\s\S]*Done\./);
}, 180_000);
