import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import type { McpServerList } from "../../agent/mcp/mcp-server-list.js";
import { type ServeStack, startServe } from "../../cli/serve-stack.js";
import { type Script, ScriptedEngine } from "../../engine/scripted/scripted-engine.js";
import { buildWebApp } from "./browser.js";
import { SocketProxy } from "./socket-proxy.js";

export interface WebHarness extends AsyncDisposable {
  /** The temporary git repository the agent works in. */
  repo: string;
  sessions: string;
  stack: ServeStack;
  /** Every browser connection goes through it, so a test can cut the network. */
  proxy: SocketProxy;
  /** The app's address through the proxy (with the key in the fragment when there is one). */
  appUrl: string;
  read(file: string): Promise<string>;
  /** A fresh browser page on the app. */
  open(options?: { width?: number; height?: number; url?: string; dark?: boolean }): Promise<Page>;
}

/**
 * What `spark serve` runs (the same startServe), on the scripted engine and a temporary git
 * repository, reached by a real browser through a cuttable proxy.
 */
export async function startWebHarness(
  browser: Browser,
  options: {
    files: Record<string, string>;
    script: Script;
    tokensPerSecond: number;
    apiKeys?: string[];
    /** The model is still loading until this resolves (requests wait for it). Default: loaded. */
    loaded?: Promise<void>;
    /** The MCP servers the agent host lists. Default: none. */
    mcp?: McpServerList;
  },
): Promise<WebHarness> {
  const repo = await mkdtemp(path.join(os.tmpdir(), "spark-web-repo-"));
  const sessions = await mkdtemp(path.join(os.tmpdir(), "spark-web-sessions-"));
  for (const [name, content] of Object.entries(options.files)) {
    await mkdir(path.dirname(path.join(repo, name)), { recursive: true });
    await writeFile(path.join(repo, name), content);
  }
  execFileSync("git", ["init", "-q"], { cwd: repo });
  const proxy = await SocketProxy.start();
  const engine = new ScriptedEngine({ script: options.script, tokensPerSecond: options.tokensPerSecond });
  const stack = await startServe({
    engine: options.loaded ? options.loaded.then(() => engine) : engine,
    modelId: engine.info.id,
    cwd: repo,
    sessionsDir: sessions,
    webDir: await buildWebApp(),
    apiKeys: options.apiKeys ?? [],
    allowedOrigins: [`http://127.0.0.1:${proxy.port}`],
    ...(options.mcp ? { mcp: options.mcp } : {}),
  });
  proxy.targetPort = stack.server.port;
  const appUrl = stack.appUrl!.replace(`:${stack.server.port}/`, `:${proxy.port}/`);
  const contexts: BrowserContext[] = [];
  return {
    repo,
    sessions,
    stack,
    proxy,
    appUrl,
    read: (file) => readFile(path.join(repo, file), "utf8"),
    async open({ width = 1280, height = 800, url = appUrl, dark = false } = {}) {
      const context = await browser.newContext({
        viewport: { width, height },
        colorScheme: dark ? "dark" : "light",
      });
      contexts.push(context);
      const page = await context.newPage();
      await page.goto(url);
      return page;
    },
    async [Symbol.asyncDispose]() {
      for (const context of contexts) await context.close();
      await proxy[Symbol.asyncDispose]();
      await stack.close();
    },
  };
}
