import { execFileSync } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { expect, test } from "vitest";
import WebSocket from "ws";
import { AgentThread } from "../agent/agent-thread.js";
import { Workspace } from "../agent/workspace.js";
import { ResponsesClient } from "../client/responses-client.js";
import { ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import { ModelRegistry } from "../server/model-registry.js";
import { SparkServer } from "../server/spark-server.js";
import { AgentHost } from "./agent-host.js";
import { SLOW_CLIENT_CLOSE_CODE } from "./host-clients.js";
import { connectHost } from "./test-support/host-client.js";

const BUDGET = 1024 * 1024;
/**
 * 1,536 words of 16 KiB: 24 MiB of text, far more than the budget and the kernel's socket buffers.
 * The words never repeat (a reply that repeats itself is stopped by the agent's repetition guard).
 */
const WORD = 16 * 1024;
const TEXT = Array.from({ length: 1536 }, (_, i) => pseudoRandomWord(i + 1, WORD)).join(" ");

function pseudoRandomWord(seed: number, length: number): string {
  const letters = new Array<string>(length);
  let state = seed;
  for (let i = 0; i < length; i++) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    letters[i] = String.fromCharCode(97 + ((state >>> 16) % 26));
  }
  return letters.join("");
}

/** What the host wrote to one client's socket, and the most it ever held unsent for it. */
interface Watched {
  socket: WebSocket;
  maxBuffered: number;
  maxLine: number;
}

test("a client that never reads is closed with its code while memory stays bounded, and resumes by seq", async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-slow-client-"));
  execFileSync("git", ["init", "-q"], { cwd: dir });
  const models = new ModelRegistry();
  // Flat out: the scripted engine yields every 64 words, so events of about 1 MiB stream without pause.
  models.add("scripted", new ScriptedEngine({ script: [{ text: TEXT }] }));
  const threads: AgentThread[] = [];
  let client: ResponsesClient | undefined;
  const host = new AgentHost(
    {
      create: async () => {
        const thread = new AgentThread({ client: client!, workspace: new Workspace(dir), instructions: "x" });
        threads.push(thread);
        return thread;
      },
      resume: async () => null,
      list: async () => [],
      rename: async () => null,
      remove: async () => false,
    },
    // Every event stays replayable, so the resume below continues from the client's last seq.
    { clientBufferBytes: BUDGET, replayBytes: 256 * 1024 * 1024 },
  );
  const watched: Watched[] = [];
  await using server = await SparkServer.start({
    models,
    sockets: {
      "/v1/agent": (socket) => {
        const entry: Watched = { socket, maxBuffered: 0, maxLine: 0 };
        watched.push(entry);
        const send = socket.send.bind(socket);
        socket.send = ((line: string) => {
          send(line);
          entry.maxLine = Math.max(entry.maxLine, Buffer.byteLength(line));
          entry.maxBuffered = Math.max(entry.maxBuffered, socket.bufferedAmount);
        }) as typeof socket.send;
        host.accept(socket);
      },
    },
  });
  client = await ResponsesClient.connect({ baseUrl: `${server.url}/v1` });
  const agentUrl = `${server.url.replace("http", "ws")}/v1/agent`;
  try {
    const slow = await connectHost(agentUrl);
    const closed = new Promise<number>((resolve) => slow.ws.once("close", (code) => resolve(code)));
    slow.send({ type: "thread.start", request_id: "s" });
    const threadId = (await slow.next((e) => e.type === "ack" && e.request_id === "s")).thread_id as string;
    const thread = threads[0]!;
    const completed = new Promise<void>((resolve) =>
      thread.on((event) => {
        if (event.type === "turn.completed") resolve();
      }),
    );

    // From here on the client reads nothing (its socket is paused), while the turn streams 24 MiB.
    slow.ws.pause();
    slow.send({ type: "turn.start", thread_id: threadId, input: "go" });
    await completed;
    const [served] = watched;
    expect(served!.socket.readyState).toBe(WebSocket.CLOSING);
    expect(served!.maxBuffered).toBeLessThanOrEqual(BUDGET + served!.maxLine);
    expect(served!.maxLine).toBeLessThan(TEXT.length / 8);

    // Reading again, it gets what was sent before the close, then the close with its code.
    slow.ws.resume();
    expect(await closed).toBe(SLOW_CLIENT_CLOSE_CODE);
    const stamped = slow.events.filter((e) => e.seq !== undefined);
    expect(stamped.map((e) => e.seq)).toEqual(stamped.map((_, i) => i));
    expect(slow.events.some((e) => e.type === "turn.completed")).toBe(false);
    const last = stamped.at(-1)!;

    // A new connection resumes after the last seq it saw, and the text is whole and unrepeated.
    const again = await connectHost(agentUrl);
    again.send({ type: "thread.resume", thread_id: threadId, after_seq: last.seq, epoch: last.epoch });
    await again.next((e) => e.type === "turn.completed", 0);
    again.ws.close();
    const resumed = again.events.filter((e) => e.seq !== undefined);
    expect(resumed[0]!.seq).toBe(last.seq! + 1);
    expect(resumed.some((e) => e.type === "thread.history")).toBe(false);
    const text = [...stamped, ...resumed]
      .filter((e) => e.type === "item.delta")
      .map((e) => e.delta)
      .join("");
    expect(text).toBe(TEXT);
  } finally {
    host.interruptAll();
    host.dispose();
    await client.close();
  }
}, 120_000);
