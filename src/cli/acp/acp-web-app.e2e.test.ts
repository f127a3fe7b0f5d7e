import type { Browser, Page } from "playwright-core";
import { afterAll, expect, test } from "vitest";
import { launchChromium, screenshot } from "../../web/test-support/browser.js";
import type { ScriptFileEntry } from "../test-support/scripted-script.js";
import { startScriptedServe, type WorkspaceServe } from "../test-support/spark-binary.js";
import { AcpTestClient } from "./test-support/acp-test-client.js";

/**
 * An editor's ACP session on a running `spark serve`, seen live in the web app in Chromium: its
 * answer shows there, and a command it asks for is approved from the browser, which withdraws the
 * editor's question.
 */

const script: ScriptFileEntry[] = [
  { match: "from the editor", text: "Answered in the editor." },
  {
    match: "deploy",
    toolCalls: [{ name: "shell", arguments: JSON.stringify({ command: "echo approved-in-browser" }) }],
  },
  { text: "Deployed." },
];

let serve: WorkspaceServe | null = null;
let browser: Browser | null = null;
let acp: AcpTestClient | null = null;

afterAll(async () => {
  await browser?.close();
  await acp?.close();
  await serve?.stop();
});

async function waitInBrowser(what: string, locator: ReturnType<Page["locator"]>): Promise<void> {
  try {
    await locator.waitFor({ timeout: 30_000 });
  } catch (error) {
    throw new Error(
      `The browser never showed ${what}: ${(error as Error).message}\nspark acp said:\n${acp?.stderr}`,
    );
  }
}

test("an editor's session is live in the web app, which can answer its approval", async () => {
  serve = await startScriptedServe(script, 200);
  const { state } = serve;

  browser = await launchChromium();
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  await page.goto(`${state.url}/#key=${encodeURIComponent(state.key!)}`);
  await waitInBrowser("an open connection", page.locator(".connection.is-open"));

  acp = AcpTestClient.start(serve.repo, serve.env);
  await acp.initialize();
  const sessionId = await acp.newSession(serve.repo);
  const first = await acp.agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "hi from the editor" }],
  });
  expect(first.stopReason).toBe("end_turn");

  const listed = page.locator(".session-open", { hasText: "hi from the editor" });
  await waitInBrowser("the editor's session in the list", listed);
  await listed.click();
  await waitInBrowser("the editor's answer", page.getByText("Answered in the editor."));

  // The editor's question stays open; the browser answers it.
  acp.answer = () => new Promise(() => {});
  const withdrawn = new Promise<void>((resolve) => {
    acp!.onCancelled = resolve;
  });
  const asked = acp.permissions.length;
  const second = acp.agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "deploy it" }],
  });
  await acp.until(() => acp!.permissions.length > asked);
  const approval = page.getByRole("alertdialog", { name: "Command approval" });
  await waitInBrowser("the editor's approval request", approval);
  await screenshot(page, "acp-01-approval");
  await approval.getByRole("button", { name: "Approve" }).click();
  await withdrawn;
  expect((await second).stopReason).toBe("end_turn");
  const ran = acp.of(sessionId, "tool_call_update").filter((u) => u.status === "completed");
  expect(JSON.stringify(ran.at(-1)?.content)).toContain("approved-in-browser");
  await waitInBrowser(
    "the command's output",
    page.locator(".command-output", { hasText: "approved-in-browser" }),
  );
  expect(acp.text(sessionId)).toContain("Deployed.");
}, 180_000);
