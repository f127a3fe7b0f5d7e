import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { emptyView, type StampedEvent } from "../../../src/client-core/thread-view.js";
import type { ThreadEvent, ThreadItem } from "../../../src/protocol/agent.js";
import { launchChromium } from "../../../src/web/test-support/browser.js";
import type { ToWebview } from "./messages.js";

/**
 * The VS Code chat view's real script, bundled as the extension bundles it, in Chromium: the
 * extension's side is played by posting the messages it sends (a thread's events, as they come).
 */

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
let browser: Browser;
let page: Page;
let seq = 0;

const stamp = (event: ThreadEvent): StampedEvent => ({
  ...event,
  thread_id: "thr_1",
  seq: seq++,
  epoch: "ep",
});
const call: ThreadItem = {
  type: "tool_call",
  id: "c1",
  name: "apply_patch",
  arguments: "",
  status: "running",
};
const delta = (text: string): ThreadEvent => ({
  type: "item.delta",
  turn_id: "t1",
  item_id: "c1",
  delta: text,
});

/** The end of a turn, as the host reports it. */
const completed = (turnId: string): ThreadEvent => ({
  type: "turn.completed",
  turn_id: turnId,
  status: "completed",
  stats: { timeToFirstTokenMs: 1, tokensPerSecond: 1, inputTokens: 1, cachedInputTokens: 0, outputTokens: 1 },
});

/** Sends the view a message as the extension does (this file is compiled without the DOM's types). */
async function send(message: ToWebview): Promise<void> {
  await page.evaluate(
    (data) =>
      (globalThis as unknown as { postMessage(data: unknown, origin: string): void }).postMessage(data, "*"),
    message,
  );
}

async function post(...events: ThreadEvent[]): Promise<void> {
  await send({ type: "actions", actions: events.map((event) => ({ action: stamp(event), at: 0 })) });
}

/** The colour a line of the view is drawn in. */
function colourOf(selector: string): Promise<string> {
  return page
    .locator(selector)
    .evaluate(
      (element) =>
        (globalThis as unknown as { getComputedStyle(e: unknown): { color: string } }).getComputedStyle(
          element,
        ).color,
    );
}

/** The signed lines the view shows under the running call, in order. */
function streamedLines(): Promise<string[]> {
  return page.locator(".entry.tool.streaming .hunk > div").allTextContents();
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
  // The webview's host API, as VS Code provides it: what the view posts is kept for the test.
  const api =
    "globalThis.posted = []; globalThis.acquireVsCodeApi = () => ({ postMessage: (m) => posted.push(m) });";
  await page.setContent(
    `<style>${css}</style><div id="spark-chat-root"></div><script>${api}</script><script>${bundle.outputFiles[0]!.text}</script>`,
  );
  const snapshot: ToWebview = {
    type: "snapshot",
    view: emptyView("thr_1"),
    connection: { status: "connected", detail: "" },
  };
  await send(snapshot);
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

describe("the VS Code chat view", () => {
  test("shows an apply_patch growing line by line, then the applied diff in its place", async () => {
    await post(
      { type: "turn.started", turn_id: "t1", input: "fix add" },
      { type: "item.started", turn_id: "t1", item: call },
      delta(
        '{"patch": "*** Begin Patch\\n*** Update File: src/math.ts\\n@@ function add\\n-  return a - b;\\n+  return a',
      ),
    );
    await page.locator(".entry.tool.streaming .line.remove").waitFor();
    expect(await streamedLines()).toEqual(["@@ function add", "-  return a - b;"]);
    await expect(page.locator(".entry.tool.streaming .tool-status").textContent()).resolves.toBe("writing");
    await expect(page.locator(".entry.tool.streaming .file-path").textContent()).resolves.toBe("src/math.ts");

    await post(delta(' + b;\\n }\\n*** End Patch"}'));
    await page.locator(".entry.tool.streaming .line.add").waitFor();
    expect(await streamedLines()).toEqual(["@@ function add", "-  return a - b;", "+  return a + b;", " }"]);
    // Coloured: additions and removals each in their own colour.
    expect(await colourOf(".entry.tool.streaming .line.add")).not.toBe(
      await colourOf(".entry.tool.streaming .line.remove"),
    );

    const diff = {
      path: "src/math.ts",
      kind: "update" as const,
      added: 1,
      removed: 1,
      hunks: [
        {
          oldStart: 1,
          oldLines: 3,
          newStart: 1,
          newLines: 3,
          lines: [
            { kind: "context" as const, text: "export function add(a: number, b: number) {" },
            { kind: "remove" as const, text: "  return a - b;" },
            { kind: "add" as const, text: "  return a + b;" },
            { kind: "context" as const, text: "}" },
          ],
        },
      ],
    };
    await post({
      type: "item.completed",
      turn_id: "t1",
      item: {
        ...call,
        status: "completed",
        output: "Updated src/math.ts (+1 -1)",
        display: { kind: "diff", files: [diff] },
      },
    });
    await page.getByRole("button", { name: "Accept" }).waitFor();
    await expect(page.locator(".entry.tool.streaming").count()).resolves.toBe(0);
    await expect(page.locator(".entry.tool .hunk-head").textContent()).resolves.toBe("@@ -1,3 +1,3 @@");
  });

  test("a patch stopped while written shows why; Esc still stops the turn with it in view", async () => {
    await post(
      completed("t1"),
      { type: "turn.started", turn_id: "t2", input: "again" },
      { type: "item.started", turn_id: "t2", item: { ...call, id: "c2" } },
      {
        type: "item.delta",
        turn_id: "t2",
        item_id: "c2",
        delta: '{"patch": "*** Begin Patch\\n*** Add File: n.ts\\n+one\\n+tw',
      },
    );
    await page.locator(".entry.tool.streaming .line.add").waitFor();
    await page.keyboard.press("Escape");
    await page.waitForFunction(() =>
      (globalThis as unknown as { posted: { type: string }[] }).posted.some((m) => m.type === "interrupt"),
    );
    await post({
      type: "item.completed",
      turn_id: "t2",
      item: {
        ...call,
        id: "c2",
        status: "failed",
        output: "Not applied: the call was stopped before it was complete.",
      },
    });
    await page.locator(".entry.tool.failed .output", { hasText: "Not applied" }).waitFor();
    await expect(page.locator(".entry.tool.streaming").count()).resolves.toBe(0);
  });

  test("an agent message streams in as Markdown: finished blocks keep their nodes, HTML stays text", async () => {
    const say = (text: string): ThreadEvent => ({
      type: "item.delta",
      turn_id: "t3",
      item_id: "m1",
      delta: text,
    });
    await post(
      completed("t2"),
      { type: "turn.started", turn_id: "t3", input: "explain" },
      { type: "item.started", turn_id: "t3", item: { type: "agent_message", id: "m1", text: "" } },
      say("Here is the **plan** <b onclick=alert(1)>x</b>:\n\n"),
      say("1. Read [docs](https://d.dev) and [this](javascript:alert(1))\n2. Pat"),
    );
    const message = page.locator(".entry.agent").last();
    await message.locator("ol li", { hasText: "Pat" }).waitFor();
    await expect(message.locator("p strong").textContent()).resolves.toBe("plan");
    await expect(message.locator("p").first().textContent()).resolves.toBe(
      "Here is the plan <b onclick=alert(1)>x</b>:",
    );
    await expect(message.locator("b").count()).resolves.toBe(0);
    await expect(
      message.locator("a").evaluateAll((links) => links.map((a) => a.getAttribute("href"))),
    ).resolves.toEqual(["https://d.dev"]);
    // Tag the finished paragraph's node: later deltas must not replace it.
    await message
      .locator("p")
      .first()
      .evaluate((p) => Object.assign(p, { kept: true }));

    await post(say("ch it\n\n```ts\n// why\nconst a"));
    await message.locator("pre code .tok-keyword").waitFor();
    await expect(message.locator("pre code .tok-comment").textContent()).resolves.toBe("// why");
    await post(say(" = 1;\n```\n\nDone."));
    await message.locator("p", { hasText: "Done." }).waitFor();
    await expect(message.locator("pre code").textContent()).resolves.toBe("// why\nconst a = 1;");
    await expect(message.locator("ol li").allTextContents()).resolves.toEqual([
      "Read docs and this",
      "Patch it",
    ]);
    await expect(
      message
        .locator("p")
        .first()
        .evaluate((p) => (p as unknown as { kept?: boolean }).kept === true),
    ).resolves.toBe(true);
  });

  test("the Plan toggle sends the message in plan mode, until it is toggled off", async () => {
    const plan = page.locator("#plan");
    await expect(plan.getAttribute("aria-pressed")).resolves.toBe("false");
    await plan.click();
    await expect(plan.getAttribute("aria-pressed")).resolves.toBe("true");
    await page.locator("#composer").fill("how would you fix it?");
    await page.locator("#composer").press("Enter");
    await plan.click();
    await page.locator("#composer").fill("Implement the plan above.");
    await page.locator("#composer").press("Enter");
    const sent = await page.evaluate(() =>
      (globalThis as unknown as { posted: { type: string }[] }).posted.filter((m) => m.type === "send"),
    );
    expect(sent.slice(-2)).toEqual([
      { type: "send", text: "how would you fix it?", mode: "auto", plan: true },
      { type: "send", text: "Implement the plan above.", mode: "auto", plan: false },
    ]);
  });

  test("each turn's message offers Fork, hidden while a turn runs; it posts the message's id", async () => {
    await post(
      { type: "turn.started", turn_id: "t9", input: "branch here" },
      {
        type: "item.completed",
        turn_id: "t9",
        item: { type: "user_message", id: "msg_u9", text: "branch here" },
      },
    );
    const fork = page
      .locator(".entry.user", { hasText: "branch here" })
      .getByRole("button", { name: "Fork" });
    await fork.waitFor({ state: "hidden" });
    await post(completed("t9"));
    await fork.click();
    const forks = await page.evaluate(() =>
      (globalThis as unknown as { posted: { type: string }[] }).posted.filter((m) => m.type === "fork"),
    );
    expect(forks).toEqual([{ type: "fork", itemId: "msg_u9" }]);
  });

  test("/skills and /agents list the host's catalog in the view, and are never sent", async () => {
    await send({
      type: "catalog",
      catalog: {
        skills: [
          {
            name: "pdf",
            description: "Fill and read PDF forms.",
            source: "project",
            file: ".agents/skills/pdf/SKILL.md",
          },
        ],
        agents: [
          {
            name: "reviewer",
            description: "Reviews a diff.",
            source: "user",
            file: "/home/me/.config/spark/agents/reviewer.md",
            tools: ["read_file"],
          },
        ],
      },
    });
    const sends = () =>
      page.evaluate(
        () =>
          (globalThis as unknown as { posted: { type: string }[] }).posted.filter((m) => m.type === "send")
            .length,
      );
    const before = await sends();
    await page.locator("#composer").fill("/skills");
    await page.locator("#composer").press("Enter");
    await expect(page.locator("#catalog pre").textContent()).resolves.toBe(
      "Skills (1); the model loads one with load_skill when a task matches it:\n" +
        "  pdf (repository, .agents/skills/pdf/SKILL.md): Fill and read PDF forms.",
    );
    await page.locator("#composer").fill("/agents");
    await page.locator("#composer").press("Enter");
    await expect(page.locator("#catalog pre").textContent()).resolves.toBe(
      "Agents (1); delegate runs a task as one:\n  reviewer (yours, tools: read_file): Reviews a diff.",
    );
    await page.locator("#catalog button").click();
    await expect(page.locator("#catalog").isHidden()).resolves.toBe(true);
    expect(await sends()).toBe(before);
  });
});
