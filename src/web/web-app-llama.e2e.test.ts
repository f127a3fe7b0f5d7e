import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
import { testModelPath } from "../engine/test-support/test-model.js";
import { launchChromium, screenshot } from "./test-support/browser.js";

const bin = fileURLToPath(new URL("../../bin/spark.js", import.meta.url));

let browser: Browser;
let child: ChildProcess | undefined;

beforeAll(async () => {
  browser = await launchChromium();
});

afterAll(async () => {
  child?.kill("SIGKILL");
  await browser?.close();
});

/** Resolves with `pattern`'s match in what `child` prints on stderr; fails if it exits first. */
function waitForStderr(child: ChildProcess, pattern: RegExp): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let stderr = "";
    child.stderr?.on("data", (chunk) => {
      stderr += chunk;
      const match = stderr.match(pattern);
      if (match) resolve(match);
    });
    child.on("exit", () => reject(new Error(`spark serve did not print ${pattern}:\n${stderr}`)));
  });
}

test("the real `spark serve` on llama.cpp (synthetic model): the app streams a turn, shows its speed, and Stop ends one", async () => {
  const model = await testModelPath();
  // A fixed workspace path keeps the system prompt, and so the greedy model's reply, the same on
  // every run: a random one once made the synthetic model stop after a single token (no speed).
  const repo = path.join(os.tmpdir(), "spark-web-llama-workspace");
  await rm(repo, { recursive: true, force: true });
  await mkdir(repo);
  const sessions = await mkdtemp(path.join(os.tmpdir(), "spark-web-llama-sessions-"));
  await writeFile(path.join(repo, "main.ts"), "console.log('hi');\n");
  execFileSync("git", ["init", "-q"], { cwd: repo });
  child = spawn(process.execPath, [bin, "serve", "--model", model, "--ctx-size", "16384", "--port", "0"], {
    cwd: repo,
    env: { ...process.env, SPARK_SESSIONS_DIR: sessions },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const exit = new Promise<number>((resolve) => child!.on("exit", (code) => resolve(code ?? -1)));
  const [, url] = await waitForStderr(child, /Web app\s+(http:\/\/\S+)/);

  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(url!);
  await page.locator(".connection.is-open").waitFor();
  const input = page.getByRole("textbox", { name: "Message" });
  await input.fill("say hello");
  await input.press("Enter");
  // Streamed text from the model appears, then the turn ends with the server's measurements.
  await page.locator(".entry-agent").first().waitFor();
  await page.locator(".meter:not(.context-meter):not(.is-live):not(.is-empty)").waitFor({ timeout: 60_000 });
  expect((await page.locator(".entry-agent").first().textContent())?.length).toBeGreaterThan(0);
  expect(await page.locator('[data-meter="speed"]').textContent()).toMatch(/\d tok\/s/);
  // The model by the name every face gives it: the default tier's, not the file's.
  expect(await page.locator(".model-name").textContent()).toBe("fast");
  await screenshot(page, "20-llama-turn");

  // A second turn is stopped as soon as its first token shows (if it is still running then).
  await input.fill("write a long story");
  await input.press("Enter");
  await page.locator(".entry-user").nth(1).waitFor();
  await page.locator(".entry-agent").nth(1).waitFor();
  if (await page.getByRole("button", { name: "Stop" }).isEnabled()) {
    await page.keyboard.press("Escape");
  }
  await page.locator(".meter:not(.context-meter):not(.is-live)").waitFor({ timeout: 60_000 });
  await screenshot(page, "21-llama-second-turn");
  await page.close();

  child.kill("SIGINT");
  expect(await exit).toBe(0);
}, 180_000);
