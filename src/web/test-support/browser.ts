import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, chromium, type Locator, type Page } from "playwright-core";

/** Debian's chromium; `SPARK_CHROMIUM` points elsewhere. */
export const CHROMIUM_PATH = process.env.SPARK_CHROMIUM ?? "/usr/bin/chromium";

const repoRoot = fileURLToPath(new URL("../../..", import.meta.url));

/** Screenshots of the browser tests (gitignored), for a person to look at. */
export const ARTIFACTS_DIR = path.join(repoRoot, "test-artifacts", "web");

/**
 * Launches headless Chromium. Fails loudly (never skips) when it cannot: these tests are how the
 * web app is known to work.
 */
export async function launchChromium(): Promise<Browser> {
  try {
    return await chromium.launch({
      executablePath: CHROMIUM_PATH,
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    });
  } catch (error) {
    throw new Error(
      `Could not launch Chromium at ${CHROMIUM_PATH} (install it: apt-get install -y chromium, or set SPARK_CHROMIUM): ${(error as Error).message}`,
    );
  }
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await mkdir(ARTIFACTS_DIR, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS_DIR, `${name}.png`), animations: "disabled" });
}

/** Builds the current web app sources into a temporary folder (esbuild: well under a second). */
export async function buildWebApp(): Promise<string> {
  const out = await mkdtemp(path.join(os.tmpdir(), "spark-web-"));
  execFileSync(process.execPath, [path.join(repoRoot, "src/web/build-web.mjs"), "--out", out], {
    stdio: "ignore",
  });
  return out;
}

/**
 * Waits until the input or text area `locator` finds holds `value`: a page renders after the event
 * that changes it, so reading the value at once may see the one before.
 */
export async function waitForValue(locator: Locator, value: string): Promise<void> {
  const element = await locator.elementHandle();
  await locator
    .page()
    .waitForFunction(([input, expected]) => (input as unknown as { value: string }).value === expected, [
      element,
      value,
    ] as const);
}
