import { execFileSync } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { HostClient } from "../client-core/host-client.js";
import type { ThreadEvent } from "../protocol/agent.js";
import { SparkError } from "../protocol/errors.js";
import { LocalAgentHost } from "../runtime/local-agent-host.js";
import { scriptedTiers } from "../runtime/test-support/scripted-tiers.js";
import { HostThread } from "./host-thread.js";

let local: LocalAgentHost;
let client: HostClient;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "spark-host-thread-"));
  await writeFile(path.join(dir, "a.txt"), "a\n");
  execFileSync("git", ["init", "-q"], { cwd: dir });
  local = await LocalAgentHost.start({
    cwd: dir,
    loadTier: scriptedTiers({ "*": { tokensPerSecond: 200 } }),
    sessionsDir: await mkdtemp(path.join(os.tmpdir(), "spark-host-thread-sessions-")),
    prewarm: false,
  });
  client = await local.connect();
});

afterAll(async () => {
  client.dispose();
  await local.dispose();
});

function record(thread: HostThread): ThreadEvent[] {
  const events: ThreadEvent[] = [];
  thread.on((event) => events.push(event));
  return events;
}

describe("a terminal thread on the in-memory agent host", () => {
  test("a turn streams its events without host stamps, and the title follows the first message", async () => {
    const thread = await HostThread.open(client);
    const events = record(thread);
    await thread.startTurn("hello host");
    expect(thread.busy).toBe(false);
    expect(events[0]).toMatchObject({ type: "turn.started", input: "hello host" });
    expect(events.at(-1)).toMatchObject({ type: "turn.completed", status: "completed" });
    for (const event of events) expect(event).not.toHaveProperty("seq");
    expect(thread.info.title).toBe("hello host");
    expect(thread.history.map((item) => item.type)).toEqual(["user_message", "agent_message"]);
    thread.close();
  });

  test("a second face on the same host acts on the terminal's running turn", async () => {
    const thread = await HostThread.open(client);
    const otherClient = await local.connect();
    const other = await HostThread.open(otherClient, thread.info.id);
    const events = record(thread);
    const words = Array.from({ length: 200 }, (_, i) => `w${i}`).join(" ");
    const turn = thread.startTurn(words);
    await new Promise<void>((resolve) => {
      const off = thread.on((event) => {
        if (event.type === "item.delta") {
          off();
          resolve();
        }
      });
    });
    expect(other.busy).toBe(true);
    other.interrupt();
    await turn;
    expect(events.at(-1)).toMatchObject({ type: "turn.completed", status: "interrupted" });
    thread.close();
    other.close();
    otherClient.dispose();
  });

  test("requests the host refuses: undo with nothing to undo, an unknown approval, a resume of no thread", async () => {
    const thread = await HostThread.open(client);
    expect(await thread.undo()).toEqual([]);
    expect(thread.respondToApproval("appr_unknown", true)).toBe(false);
    expect(thread.cancelSubAgent("sub_unknown")).toBe(false);
    await expect(HostThread.open(client, "thr_nope")).rejects.toMatchObject({
      constructor: SparkError,
      code: "not_found",
    });
    thread.close();
  });

  test("a queued message the host refuses is shown in the thread as an error notice", async () => {
    const thread = await HostThread.open(client);
    const events = record(thread);
    thread.enqueue("x".repeat(1024 * 1024 + 1));
    const notice = await new Promise<ThreadEvent>((resolve) => {
      const off = thread.on((event) => {
        if (event.type === "item.completed" && event.item.type === "notice") {
          off();
          resolve(event);
        }
      });
    });
    expect(notice).toMatchObject({ item: { type: "notice", text: expect.stringMatching(/^Error: /) } });
    expect(events.some((event) => event.type === "turn.started")).toBe(false);
    thread.close();
  });
});
