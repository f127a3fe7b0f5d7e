import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import WebSocket from "ws";
import { type ServeStack, startServe } from "../../../src/cli/serve-stack.js";
import { HostClient, HostClientError, type ThreadRequest } from "../../../src/client-core/host-client.js";
import type { SocketFactory, WebSocketLike } from "../../../src/client-core/socket.js";
import {
  emptyView,
  reduceView,
  type StampedEvent,
  type ThreadView,
} from "../../../src/client-core/thread-view.js";
import { type Script, ScriptedEngine } from "../../../src/engine/scripted/scripted-engine.js";
import type { ThreadItem } from "../../../src/protocol/agent.js";
import { applyReplacement, FileReview } from "./hunk-edits.js";
import { agentSocketUrl } from "./spark-launcher.js";

/** Sends a request; the events it causes are what these tests check, so its answer is not awaited. */
function fire(client: HostClient, request: ThreadRequest): void {
  client.request(request).catch(() => {});
}

const words = Array.from({ length: 300 }, (_, i) => `w${i}`).join(" ");
const original = `${Array.from({ length: 20 }, (_, i) => `line ${i + 1}`).join("\n")}\n`;
const patch = [
  "*** Begin Patch",
  "*** Update File: a.txt",
  "@@",
  "-line 2",
  "+line two",
  "@@",
  "-line 18",
  "+line eighteen",
  "*** End Patch",
].join("\n");

const script: Script = (request) => {
  const last = request.messages.at(-1);
  if (last?.role !== "user") return { text: "Done." };
  if (last.content === "long") return { text: words };
  if (last.content === "edit")
    return { toolCalls: [{ name: "apply_patch", arguments: JSON.stringify({ patch }) }] };
  if (last.content.startsWith("run")) {
    return { toolCalls: [{ name: "shell", arguments: JSON.stringify({ command: "true" }) }] };
  }
  return { text: `echo: ${last.content}` };
};

let dir: string;
let sessions: string;
let stack: ServeStack;

async function serve(): Promise<ServeStack> {
  return startServe({
    engine: new ScriptedEngine({ script, tokensPerSecond: 400 }),
    port: 0,
    cwd: dir,
    sessionsDir: sessions,
    webDir: null,
  });
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "spark-vscode-host-"));
  sessions = await mkdtemp(path.join(os.tmpdir(), "spark-vscode-sessions-"));
  await writeFile(path.join(dir, "a.txt"), original);
  execFileSync("git", ["init", "-q"], { cwd: dir });
  stack = await serve();
});

afterAll(async () => {
  await stack.close();
});

/** A client whose sockets the test can cut, folding every event into a view. */
function harness(url = agentSocketUrl(stack.server.url)) {
  const sockets: WebSocket[] = [];
  const createSocket: SocketFactory = (target, protocols, headers) => {
    const socket = new WebSocket(target, protocols, { headers });
    sockets.push(socket);
    return socket as unknown as WebSocketLike;
  };
  const client = new HostClient({ url, createSocket, reconnectDelayMs: 20 });
  const events: StampedEvent[] = [];
  let view: ThreadView = emptyView();
  const waiters: { match: (e: StampedEvent) => boolean; resolve: (e: StampedEvent) => void }[] = [];
  client.on("event", (event) => {
    events.push(event);
    view = reduceView(view, event, performance.now());
    for (const waiter of [...waiters]) {
      if (waiter.match(event)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(event);
      }
    }
  });
  client.on("reset", (threadId) => {
    view = emptyView(threadId);
  });
  return {
    client,
    sockets,
    events,
    view: () => view,
    next: (match: (e: StampedEvent) => boolean) =>
      new Promise<StampedEvent>((resolve) => waiters.push({ match, resolve })),
  };
}

const agentText = (view: ThreadView) =>
  view.entries
    .filter((entry) => entry.kind === "agent")
    .map((entry) => entry.text)
    .join("|");

describe("host client against a real spark serve", () => {
  test("starts a thread, streams a turn into the view, seq strictly increasing", async () => {
    const h = harness();
    await h.client.connect();
    const thread = await h.client.startThread();
    expect(thread.cwd).toBe(dir);
    const done = h.next((e) => e.type === "turn.completed");
    fire(h.client, { type: "turn.start", thread_id: thread.id, input: "hello" });
    expect(await done).toMatchObject({ status: "completed" });
    expect(agentText(h.view())).toBe("echo: hello");
    expect(h.view().entries[0]).toMatchObject({ kind: "user", text: "hello" });
    expect(h.events.map((e) => e.seq)).toEqual(h.events.map((_, i) => i));
    h.client.dispose();
    expect(h.client.status).toBe("closed");
  });

  test("a cut connection reconnects and resumes with after_seq: every delta exactly once", async () => {
    const h = harness();
    await h.client.connect();
    const thread = await h.client.startThread();
    const firstDelta = h.next((e) => e.type === "item.delta");
    fire(h.client, { type: "turn.start", thread_id: thread.id, input: "long" });
    await firstDelta;
    h.sockets[0]!.terminate();
    const statuses: string[] = [];
    h.client.on("status", (status) => statuses.push(status));
    await h.next((e) => e.type === "turn.completed");
    expect(statuses).toEqual(["reconnecting", "open"]);
    expect(h.sockets).toHaveLength(2);
    expect(agentText(h.view())).toBe(words);
    const seqs = h.events.map((e) => e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i));
    h.client.dispose();
  });

  test("queue, steer and interrupt; errors of the host reach the caller", async () => {
    const h = harness();
    await h.client.connect();
    const { id } = await h.client.startThread();
    fire(h.client, { type: "turn.start", thread_id: id, input: "long" });
    await h.next((e) => e.type === "item.delta");
    fire(h.client, { type: "turn.queue", thread_id: id, input: "after" });
    await h.next((e) => e.type === "turn.queued");
    expect(h.view().queued).toEqual(["after"]);
    fire(h.client, { type: "turn.steer", thread_id: id, input: "shorter" });
    await h.next((e) => e.type === "turn.completed");
    expect(h.view().entries.find((e) => e.kind === "user" && e.text === "shorter")).toMatchObject({
      steer: true,
    });
    await h.next((e) => e.type === "turn.completed");
    expect(h.view().queued).toEqual([]);
    expect(agentText(h.view())).toMatch(/echo: shorter\|echo: after$/);

    fire(h.client, { type: "turn.start", thread_id: id, input: "long" });
    await h.next((e) => e.type === "item.delta");
    fire(h.client, { type: "turn.interrupt", thread_id: id });
    expect(await h.next((e) => e.type === "turn.completed")).toMatchObject({ status: "interrupted" });

    const errors: string[] = [];
    h.client.on("error", (error) => errors.push(error.code));
    await expect(h.client.resumeThread("thr_nope")).rejects.toMatchObject({
      code: "host_error",
      wire: { code: "not_found" },
    });
    // The error answered the resume: it is not also an unanswered error event.
    expect(errors).toEqual([]);
    h.client.dispose();
    await expect(h.client.list()).rejects.toThrow(HostClientError);
  });

  test("approvals round-trip", async () => {
    const h = harness();
    await h.client.connect();
    const { id } = await h.client.startThread();
    fire(h.client, { type: "turn.start", thread_id: id, input: "run true please" });
    await h.next((e) => e.type === "approval.requested");
    const [approval] = h.view().approvals;
    expect(approval).toMatchObject({ command: "true" });
    fire(h.client, {
      type: "approval.respond",
      thread_id: id,
      approval_id: approval!.approval_id,
      approved: true,
    });
    await h.next((e) => e.type === "turn.completed");
    expect(h.view().approvals).toEqual([]);
    expect(h.view().entries).toContainEqual(expect.objectContaining({ text: "Approved: $ true" }));
    expect(h.view().entries.find((e) => e.kind === "tool")).toMatchObject({
      item: { name: "shell", status: "completed" },
    });
    h.client.dispose();
  });

  test("an applied patch is reviewed per hunk: one rejected on disk, the file then accepted", async () => {
    const h = harness();
    await h.client.connect();
    const { id } = await h.client.startThread();
    fire(h.client, { type: "turn.start", thread_id: id, input: "edit" });
    await h.next((e) => e.type === "turn.completed");
    const tool = h.view().entries.find((e) => e.kind === "tool");
    const item = (tool as { item: Extract<ThreadItem, { type: "tool_call" }> }).item;
    expect(item.display?.kind).toBe("diff");
    const [file] = item.display?.kind === "diff" ? item.display.files : [];
    const review = new FileReview(item.id, file!);
    expect(review.hunks).toHaveLength(2);

    const file1 = path.join(dir, "a.txt");
    const patched = await readFile(file1, "utf8");
    expect(patched).toBe(original.replace("line 2\n", "line two\n").replace("line 18\n", "line eighteen\n"));
    review.accept(0);
    const edit = review.planReject(patched, 1)!;
    await writeFile(file1, applyReplacement(patched, edit));
    review.markRejected(1);
    expect(review.outcome).toBe("mixed");
    expect(await readFile(file1, "utf8")).toBe(original.replace("line 2\n", "line two\n"));

    // The file is no longer what the patch wrote (a hunk was rejected in the editor): undo through
    // the host refuses, naming the file, and leaves it as the person left it.
    const refused = h.client.request({ type: "thread.undo", thread_id: id }).then(
      () => null,
      (error: HostClientError) => error.wire,
    );
    expect(await refused).toMatchObject({
      code: "invalid_request",
      message: expect.stringContaining("a.txt"),
    });
    expect(await readFile(file1, "utf8")).toBe(original.replace("line 2\n", "line two\n"));

    // Once the file holds what the patch wrote again, undo takes the patch back byte for byte.
    await writeFile(file1, patched);
    fire(h.client, { type: "thread.undo", thread_id: id });
    expect(await h.next((e) => e.type === "patch.undone")).toMatchObject({ item_id: item.id });
    expect(await readFile(file1, "utf8")).toBe(original);
    expect(h.view().entries.find((e) => e.kind === "tool")).toMatchObject({ files: { "a.txt": "undone" } });
    h.client.dispose();
  });

  test("a server restarted under the client: its history arrives as a reset, nothing lost", async () => {
    const h = harness();
    await h.client.connect();
    const { id } = await h.client.startThread();
    fire(h.client, { type: "turn.start", thread_id: id, input: "before restart" });
    await h.next((e) => e.type === "turn.completed");
    expect(h.client.lastSeq(id)).toBeGreaterThan(5);

    const oldEpoch = h.events.at(-1)!.epoch;
    await stack.close();
    stack = await serve();
    const resets: string[] = [];
    h.client.on("reset", (threadId) => resets.push(threadId));
    // The client resumes with its old epoch; the new host answers with the thread's history.
    const history = h.next((e) => e.type === "thread.history");
    await h.client.retarget(agentSocketUrl(stack.server.url));
    const reset = await history;
    expect(reset).toMatchObject({ reset: true, thread: { id } });
    expect(reset.epoch).not.toBe(oldEpoch);
    expect(agentText(h.view())).toBe("echo: before restart");
    // The host loads the thread's transcript when the client resumes it, so the first turn.start
    // may come too soon ("not open"): a person would try again, and so does the test.
    const done = h.next((e) => e.type === "turn.completed");
    for (let attempt = 0; ; attempt++) {
      const refused = new Promise<boolean>((resolve) => {
        const off = h.client.on("error", () => {
          off();
          resolve(true);
        });
        void h.next((e) => e.type === "turn.started").then(() => resolve(false));
      });
      fire(h.client, { type: "turn.start", thread_id: id, input: "after restart" });
      if (!(await refused)) break;
      expect(attempt).toBeLessThan(100);
    }
    await done;
    expect(resets).toEqual([id]);
    expect(
      h
        .view()
        .entries.filter((e) => e.kind === "user")
        .map((e) => e.kind === "user" && e.text),
    ).toEqual(["before restart", "after restart"]);
    expect(agentText(h.view())).toBe("echo: before restart|echo: after restart");
    h.client.dispose();
  });

  test("retargeting an open client with fresh replays its threads from the start, once", async () => {
    const h = harness();
    await h.client.connect();
    const { id } = await h.client.startThread();
    fire(h.client, { type: "turn.start", thread_id: id, input: "once" });
    await h.next((e) => e.type === "turn.completed");
    const before = h.view();
    const resets: string[] = [];
    h.client.on("reset", (threadId) => resets.push(threadId));
    const replayed = h.next((e) => e.type === "turn.completed");
    await h.client.retarget(agentSocketUrl(stack.server.url), { fresh: true });
    await replayed;
    expect(resets).toEqual([id]);
    expect(h.sockets).toHaveLength(2);
    expect(h.view().entries).toEqual(before.entries);
    expect(agentText(h.view())).toBe("echo: once");
    h.client.dispose();
  });

  test("the first connection failing is one clear error", async () => {
    const client = new HostClient({
      url: "ws://127.0.0.1:9/v1/agent",
      createSocket: (url, protocols, headers) =>
        new WebSocket(url, protocols, { headers }) as unknown as WebSocketLike,
    });
    await expect(client.connect()).rejects.toMatchObject({ code: "connect_failed" });
    expect(client.status).toBe("closed");
  });
});

describe("host client against a spark serve whose model is still loading", () => {
  test("a thread started during the load starts once the model is ready, past the request timeout, and its turn runs once", async () => {
    let finishLoading!: () => void;
    const loaded = new Promise<void>((resolve) => {
      finishLoading = resolve;
    });
    const seen: string[] = [];
    const engine = new ScriptedEngine({
      script: (request, turn) => {
        const last = request.messages.at(-1);
        if (last?.role === "user") seen.push(last.content);
        return script(request, turn);
      },
    });
    await using loading = await startServe({
      engine: loaded.then(() => engine),
      modelId: engine.info.id,
      port: 0,
      cwd: dir,
      sessionsDir: sessions,
      webDir: null,
    });
    const client = new HostClient({
      url: agentSocketUrl(loading.server.url),
      createSocket: (url, protocols, headers) =>
        new WebSocket(url, protocols, { headers }) as unknown as WebSocketLike,
      // Ordinary requests give up at once; starting a thread waits for the model instead.
      requestTimeoutMs: 1,
    });
    await client.connect();
    const started = client.startThread();
    const health = (await (await fetch(`${loading.server.url}/healthz`)).json()) as { models: unknown };
    expect(health.models).toEqual([{ id: "scripted", status: "loading" }]);
    finishLoading();
    const thread = await started;
    const done = new Promise<StampedEvent>((resolve) =>
      client.on("event", (event) => {
        if (event.type === "turn.completed") resolve(event);
      }),
    );
    fire(client, { type: "turn.start", thread_id: thread.id, input: "hello" });
    expect(await done).toMatchObject({ status: "completed" });
    expect(seen).toEqual(["hello"]);
    client.dispose();
  });
});
