import { afterEach, describe, expect, test } from "vitest";
import type { HostClient, PromptProgress } from "../client-core/host-client.js";
import { connectHost } from "./test-support/host-client.js";
import { type Cleanups, connectCoreClient, serveThreadlessHost } from "./test-support/threadless-host.js";

const cleanups: Cleanups = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const nextProgress = (client: HostClient, match: (progress: PromptProgress) => boolean) =>
  new Promise<PromptProgress>((resolve) => {
    const off = client.on("prompt", (progress) => {
      if (!match(progress)) return;
      off();
      resolve(progress);
    });
  });

describe("the agent host tells its clients how far the agent prompt's evaluation is (prompt.progress)", () => {
  test("connected clients hear each step, a client connecting meanwhile gets the last, none after the end", async () => {
    const { host, url } = await serveThreadlessHost({}, cleanups);
    const early = await connectCoreClient(url, cleanups);
    const heard: PromptProgress[] = [];
    early.on("prompt", (progress) => heard.push(progress));
    const ended = nextProgress(early, (progress) => progress.done);
    host.showPromptProgress({ evaluated: 128, total: 2700, done: false });
    host.showPromptProgress({ evaluated: 1200, total: 2700, done: false });

    const late = await connectHost(url);
    cleanups.push(() => late.ws.close());
    expect(await late.next((event) => event.type === "prompt.progress", 0)).toEqual({
      type: "prompt.progress",
      evaluated_tokens: 1200,
      total_tokens: 2700,
      done: false,
    });

    host.showPromptProgress({ evaluated: 2700, total: 2700, done: true });
    expect(await ended).toEqual({ evaluated: 2700, total: 2700, done: true });
    expect(heard.map((progress) => progress.evaluated)).toEqual([128, 1200, 2700]);
    expect(early.promptProgress).toEqual({ evaluated: 2700, total: 2700, done: true });

    // Once it is over, a new client is not told of it (what it is sent on connecting comes before
    // the answer to its first request).
    const after = await connectHost(url);
    cleanups.push(() => after.ws.close());
    after.send({ type: "thread.list" });
    await after.next((event) => event.type === "thread.list", 0);
    expect(after.events.filter((event) => event.type === "prompt.progress")).toEqual([]);
  });

  test("a malformed prompt.progress is ignored and logged, and the last good one kept", async () => {
    const { host, url } = await serveThreadlessHost({}, cleanups);
    const core = await connectCoreClient(url, cleanups);
    const logs: string[] = [];
    core.on("log", (line) => logs.push(line));
    const good = nextProgress(core, () => true);
    host.showPromptProgress({ evaluated: 5, total: 10, done: false });
    await good;
    const logged = new Promise<void>((resolve) => core.on("log", () => resolve()));
    // More evaluated than in all: not a count this host could send.
    host.showPromptProgress({ evaluated: 11, total: 10, done: false });
    await logged;
    expect(logs).toEqual(["Ignored a prompt.progress event: not counts of evaluated and total tokens"]);
    expect(core.promptProgress).toEqual({ evaluated: 5, total: 10, done: false });
  });
});
