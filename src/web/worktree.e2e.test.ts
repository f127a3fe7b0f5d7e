import { execFileSync } from "node:child_process";
import { mkdtemp, readFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, test, vi } from "vitest";
import type { Script } from "../engine/scripted/scripted-engine.js";
import { launchChromium, screenshot } from "./test-support/browser.js";
import { startWebHarness, type WebHarness } from "./test-support/web-harness.js";

const APP_TS = "export const port = 8080;\n";
const PATCH = [
  "*** Begin Patch",
  "*** Update File: src/app.ts",
  "@@",
  "-export const port = 8080;",
  "+export const port = 9090;",
  "*** End Patch",
].join("\n");

const script: Script = (request) => {
  const last = request.messages.at(-1);
  if (last?.role === "tool") return { text: "Port changed." };
  return { toolCalls: [{ name: "apply_patch", arguments: JSON.stringify({ patch: PATCH }) }] };
};

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, encoding: "utf8" });

let browser: Browser;
let h: WebHarness;
let home: string;

beforeAll(async () => {
  home = await mkdtemp(path.join(os.tmpdir(), "spark-web-wt-home-"));
  // Where the host makes Spark's worktrees.
  vi.stubEnv("SPARK_HOME", home);
  browser = await launchChromium();
  h = await startWebHarness(browser, { files: { "src/app.ts": APP_TS }, script, tokensPerSecond: 200 });
  git(h.repo, "add", ".");
  git(h.repo, "commit", "-qm", "init");
});

afterAll(async () => {
  await h?.[Symbol.asyncDispose]();
  await browser?.close();
  vi.unstubAllEnvs();
});

test("a new session in a worktree from the web app: the edit lands there, the main tree is untouched", async () => {
  const page = await h.open();
  await page.locator(".connection.is-open").waitFor();
  await page.getByRole("button", { name: "New worktree session" }).click();
  const name = page.getByRole("textbox", { name: "Worktree name" });
  await name.waitFor();

  // A name the host would refuse is refused here first, saying why.
  await name.fill("../escape");
  await page.locator(".worktree-problem").waitFor();
  await expect(page.getByRole("button", { name: "Start" }).isDisabled()).resolves.toBe(true);

  await name.fill("web-port");
  await page.getByRole("button", { name: "Start", disabled: false }).click();
  await page.locator(".worktree-badge", { hasText: "web-port" }).waitFor();

  const prompt = page.getByRole("textbox", { name: "Message" });
  await prompt.fill("make the port 9090");
  await prompt.press("Enter");
  await page.getByText("Port changed.").waitFor();
  await page.locator(".session-worktree", { hasText: "web-port" }).waitFor();
  await screenshot(page, "worktree-session");

  const trees = git(h.repo, "worktree", "list", "--porcelain");
  const tree = /^worktree (.*\/web-port)$/m.exec(trees)?.[1];
  expect(tree).toBeDefined();
  expect(tree!.startsWith(home)).toBe(true);
  expect(await readFile(path.join(tree!, "src/app.ts"), "utf8")).toBe("export const port = 9090;\n");
  expect(await h.read("src/app.ts")).toBe(APP_TS);
  expect(git(tree!, "rev-parse", "--abbrev-ref", "HEAD").trim()).toBe("spark/web-port");
});
