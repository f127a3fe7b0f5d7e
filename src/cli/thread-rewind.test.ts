import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import type { HostClient } from "../client-core/host-client.js";
import { emptyView, reduceView, type ThreadView } from "../client-core/thread-view.js";
import type { Script } from "../engine/scripted/scripted-engine.js";
import type { RewindRestore } from "../protocol/agent.js";
import { LocalAgentHost } from "../runtime/local-agent-host.js";
import { scriptedTiers } from "../runtime/test-support/scripted-tiers.js";

const patch = (lines: string[]) =>
  JSON.stringify({ patch: ["*** Begin Patch", ...lines, "*** End Patch"].join("\n") });

/**
 * "one": a.txt a -> one, adds new.txt; "two": a.txt one -> two; "three": b.txt b -> three;
 * "wait…": a long answer (a turn to rewind during); anything else is echoed. Each message the model
 * sees is listed in `seen`, so a test knows what the conversation was.
 */
const seen: string[][] = [];
const script: Script = (request) => {
  seen.push(request.messages.flatMap((m) => (m.role === "user" ? [m.content] : [])));
  const last = request.messages.at(-1);
  if (last?.role !== "user") return { text: "done" };
  const edits: Record<string, string[]> = {
    one: ["*** Update File: a.txt", "@@", "-a", "+one", "*** Add File: new.txt", "+new"],
    two: ["*** Update File: a.txt", "@@", "-one", "+two"],
    three: ["*** Update File: b.txt", "@@", "-b", "+three"],
  };
  const edit = edits[last.content];
  if (edit) return { toolCalls: [{ name: "apply_patch", arguments: patch(edit) }] };
  if (last.content.startsWith("wait"))
    return { text: Array.from({ length: 2000 }, (_, i) => `w${i}`).join(" ") };
  return { text: `echo: ${last.content}` };
};

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close();
});

/** A local agent host (the terminal's: the real runtime, sessions and host) on the scripted model. */
async function startHost(dir?: string) {
  const cwd = dir ?? (await mkdtemp(path.join(os.tmpdir(), "spark-rewind-")));
  if (!dir) {
    await writeFile(path.join(cwd, "a.txt"), "a\n");
    await writeFile(path.join(cwd, "b.txt"), "b\n");
    execFileSync("git", ["init", "-q"], { cwd });
  }
  const host = await LocalAgentHost.start({
    cwd,
    loadTier: scriptedTiers({ "*": { script, tokensPerSecond: 2000 } }),
    prewarm: false,
    sessionsDir: path.join(cwd, ".git", "spark-sessions"),
  });
  const client = await host.connect();
  cleanup.push(async () => {
    client.dispose();
    await host.dispose();
  });
  return { cwd, host, client, ...follow(client) };
}

/** The client core's view of every thread the client follows, and waiting on its events. */
function follow(client: HostClient) {
  const views = new Map<string, ThreadView>();
  const waiters: { match: () => boolean; resolve: () => void }[] = [];
  client.on("event", (event) => {
    views.set(event.thread_id, reduceView(views.get(event.thread_id) ?? emptyView(), event, Date.now()));
    for (const waiter of [...waiters]) {
      if (waiter.match()) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  });
  const view = (id: string) => views.get(id) ?? emptyView(id);
  const until = (match: () => boolean) =>
    match() ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ match, resolve }));
  return { view, until };
}

type Host = Awaited<ReturnType<typeof startHost>>;

async function turn(h: Host, threadId: string, input: string): Promise<void> {
  const done = h.view(threadId).turns.length + 1;
  await h.client.request({ type: "turn.start", thread_id: threadId, input });
  await h.until(() => h.view(threadId).turns.length >= done);
}

/** Asks the host to rewind thread `threadId` to before item `itemId`. */
const rewind = (client: HostClient, threadId: string, itemId: string, restore: RewindRestore) =>
  client.request({ type: "thread.rewind", thread_id: threadId, item_id: itemId, restore });

/** The user messages of the view, oldest first, with their ids. */
const users = (view: ThreadView) =>
  view.entries.flatMap((entry) => (entry.kind === "user" ? [{ id: entry.id, text: entry.text }] : []));

const read = (dir: string, name: string) => readFile(path.join(dir, name), "utf8");
const exists = (dir: string, name: string) =>
  stat(path.join(dir, name)).then(
    () => true,
    () => false,
  );

async function threeTurns(h: Host) {
  const { id } = await h.client.startThread();
  for (const input of ["one", "two", "three"]) await turn(h, id, input);
  expect(await read(h.cwd, "a.txt")).toBe("two\n");
  expect(await read(h.cwd, "b.txt")).toBe("three\n");
  return { id, messages: users(h.view(id)) };
}

describe("thread.rewind", () => {
  test("code: files go back to before the turn (later turns undone too); the conversation stays", async () => {
    const h = await startHost();
    const { id, messages } = await threeTurns(h);
    await rewind(h.client, id, messages[1]!.id, "code");
    expect(await read(h.cwd, "a.txt")).toBe("one\n");
    expect(await read(h.cwd, "b.txt")).toBe("b\n");
    expect(await read(h.cwd, "new.txt")).toBe("new\n");
    const view = h.view(id);
    expect(users(view).map((m) => m.text)).toEqual(["one", "two", "three"]);
    expect(view.entries.at(-1)).toMatchObject({
      kind: "notice",
      text: expect.stringMatching(
        /^Rewound the code to before "two": restored (a\.txt, b\.txt|b\.txt, a\.txt)\.$/,
      ),
    });
    // Undo no longer offers the rewound patches: it takes back the first turn's.
    await h.client.request({ type: "thread.undo", thread_id: id });
    expect(await read(h.cwd, "a.txt")).toBe("a\n");
    expect(await exists(h.cwd, "new.txt")).toBe(false);
  });

  test("conversation: items cut before the turn, the model sees only the kept ones, files stay", async () => {
    const h = await startHost();
    const { id, messages } = await threeTurns(h);
    await rewind(h.client, id, messages[1]!.id, "conversation");
    expect(users(h.view(id)).map((m) => m.text)).toEqual(["one"]);
    expect(await read(h.cwd, "a.txt")).toBe("two\n");
    seen.length = 0;
    await turn(h, id, "hello again");
    expect(seen[0]).toEqual(["one", "hello again"]);
    expect(users(h.view(id)).map((m) => m.text)).toEqual(["one", "hello again"]);
    // The cut turns' edits now belong to the last kept turn: rewinding its code undoes them too.
    await rewind(h.client, id, messages[0]!.id, "code");
    expect(await read(h.cwd, "a.txt")).toBe("a\n");
    expect(await read(h.cwd, "b.txt")).toBe("b\n");
    expect(await exists(h.cwd, "new.txt")).toBe(false);
  });

  test("both, then a resume sees the rewound conversation and can still rewind code", async () => {
    const h = await startHost();
    const { id, messages } = await threeTurns(h);
    await rewind(h.client, id, messages[2]!.id, "both");
    expect(await read(h.cwd, "b.txt")).toBe("b\n");
    expect(await read(h.cwd, "a.txt")).toBe("two\n");
    expect(users(h.view(id)).map((m) => m.text)).toEqual(["one", "two"]);
    expect(h.view(id).entries.at(-1)).toMatchObject({
      text: 'Rewound the conversation and code (restored b.txt) to before "three".',
    });
    const cwd = h.cwd;
    for (const close of cleanup.splice(0).reverse()) await close();

    const again = await startHost(cwd);
    await again.client.resumeThread(id);
    await again.until(() => users(again.view(id)).length === 2);
    expect(users(again.view(id)).map((m) => m.text)).toEqual(["one", "two"]);
    seen.length = 0;
    await turn(again, id, "after resume");
    expect(seen[0]).toEqual(["one", "two", "after resume"]);
    // The checkpoints were kept beside the transcript: the first turn's code can still go back.
    await rewind(again.client, id, messages[0]!.id, "both");
    expect(await read(cwd, "a.txt")).toBe("a\n");
    expect(await exists(cwd, "new.txt")).toBe(false);
    expect(users(again.view(id))).toEqual([]);
  });

  test("a file the person changed since is named and nothing is touched (both: not the conversation either)", async () => {
    const h = await startHost();
    const { id, messages } = await threeTurns(h);
    await writeFile(path.join(h.cwd, "a.txt"), "by hand\n");
    for (const restore of ["code", "both"] as const) {
      await expect(rewind(h.client, id, messages[0]!.id, restore)).rejects.toMatchObject({
        wire: { code: "invalid_request", message: expect.stringContaining("a.txt changed since") },
      });
    }
    expect(await read(h.cwd, "a.txt")).toBe("by hand\n");
    expect(await read(h.cwd, "b.txt")).toBe("three\n");
    expect(await read(h.cwd, "new.txt")).toBe("new\n");
    expect(users(h.view(id)).map((m) => m.text)).toEqual(["one", "two", "three"]);
    // A rewind that does not reach the changed file's turns goes through.
    await rewind(h.client, id, messages[2]!.id, "code");
    expect(await read(h.cwd, "b.txt")).toBe("b\n");
  });

  test("refused for an unknown or malformed item_id and while a turn runs", async () => {
    const h = await startHost();
    const { id } = await h.client.startThread();
    await turn(h, id, "hello");
    const [message] = users(h.view(id));
    const agentItem = h.view(id).entries.find((entry) => entry.kind === "agent")!;
    for (const itemId of ["item_nope", agentItem.id]) {
      await expect(rewind(h.client, id, itemId, "both")).rejects.toMatchObject({
        wire: { code: "not_found", param: "item_id" },
      });
    }
    for (const bad of [
      { item_id: "", restore: "both" },
      { item_id: "x".repeat(129), restore: "both" },
      { item_id: message!.id, restore: "everything" },
      { item_id: 7, restore: "code" },
    ]) {
      await expect(
        h.client.request({ type: "thread.rewind", thread_id: id, ...bad } as never),
      ).rejects.toMatchObject({ wire: { code: "invalid_event" } });
    }
    await h.client.request({ type: "turn.start", thread_id: id, input: "wait for it" });
    await h.until(() => h.view(id).turn !== null);
    await expect(rewind(h.client, id, message!.id, "conversation")).rejects.toMatchObject({
      wire: { code: "invalid_request", param: "thread_id" },
    });
    await h.client.request({ type: "turn.interrupt", thread_id: id });
    await h.until(() => h.view(id).turn === null);
    expect(users(h.view(id)).map((m) => m.text)).toEqual(["hello", "wait for it"]);
    await rewind(h.client, id, message!.id, "conversation");
    expect(users(h.view(id))).toEqual([]);
  });
});
