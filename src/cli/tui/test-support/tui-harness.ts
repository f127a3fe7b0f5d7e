import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { RenderOptions } from "ink";
import { AgentThread } from "../../../agent/agent-thread.js";
import type { AgentThreadOptions } from "../../../agent/agent-thread-options.js";
import { Workspace } from "../../../agent/workspace.js";
import { ResponsesClient } from "../../../client/responses-client.js";
import { ScriptedEngine, type ScriptedEngineOptions } from "../../../engine/scripted/scripted-engine.js";
import { startTestServer, type TestServer } from "../../../server/test-support/test-server.js";
import { type MountedTui, mountTui } from "../run-tui.js";
import type { TuiOptions } from "../tui-options.js";
import { FakeStdin, FakeStdout } from "./fake-terminal.js";

export interface TuiHarness extends AsyncDisposable {
  dir: string;
  engine: ScriptedEngine;
  server: TestServer;
  /** The first thread; `threads` holds every thread made, newest last. */
  thread: AgentThread;
  threads: AgentThread[];
  makeThread: () => AgentThread;
  stdin: FakeStdin;
  stdout: FakeStdout;
  /**
   * Mounts the TUI on the fake terminal, by default in debug mode (each write a whole frame); pass
   * `options.stdout` and `ink` to render elsewhere, e.g. interactively on a virtual terminal.
   */
  mount(options?: Partial<TuiOptions>, ink?: Partial<RenderOptions>): MountedTui;
  /** Types `text`, waits until the prompt shows it, then presses `key` (Enter by default). */
  send(text: string, key?: string): Promise<void>;
}

/**
 * A real agent for TUI tests: the scripted engine behind a real Spark server, the real Responses
 * client and AgentThread, on a temporary workspace; only the terminal is fake.
 */
export async function tuiHarness(
  files: Record<string, string>,
  engineOptions: ScriptedEngineOptions,
  threadOptions: Partial<AgentThreadOptions> = {},
): Promise<TuiHarness> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-tui-"));
  for (const [name, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(path.join(dir, name), content);
  }
  const engine = new ScriptedEngine(engineOptions);
  const server = await startTestServer(engine);
  const client = await ResponsesClient.connect({ baseUrl: `${server.url}/v1` });
  const workspace = new Workspace(dir);
  const threads: AgentThread[] = [];
  const makeThread = () => {
    const thread = new AgentThread({
      client,
      workspace,
      instructions: "You are Spark.",
      model: engine.info.id,
      ...threadOptions,
    });
    threads.push(thread);
    return thread;
  };
  const thread = makeThread();
  const stdin = new FakeStdin();
  const stdout = new FakeStdout();
  let mounted: MountedTui | null = null;
  return {
    dir,
    engine,
    server,
    thread,
    threads,
    makeThread,
    stdin,
    stdout,
    mount(options = {}, ink = { debug: true, interactive: true }) {
      mounted = mountTui(
        {
          thread,
          modelId: engine.info.id,
          newThread: async () => makeThread(),
          stdin: stdin as unknown as NodeJS.ReadStream,
          stdout: stdout as unknown as NodeJS.WriteStream,
          ...options,
        },
        { ink: { patchConsole: false, ...ink } },
      );
      return mounted;
    },
    async send(text, key = "\r") {
      await stdin.press(text);
      // Inside the prompt box, not anywhere on the screen.
      const last = text.split("\n").at(-1)!;
      await stdout.waitFor((frame) =>
        frame.split("\n").some((line) => line.startsWith("│") && line.includes(last)),
      );
      await stdin.press(key);
    },
    async [Symbol.asyncDispose]() {
      mounted?.instance.unmount();
      for (const t of threads) t.interrupt();
      await client.close();
      await server.server.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
