import { describe, expect, test } from "vitest";
import type { McpServerInfo, ThreadInfo } from "../protocol/agent.js";
import { HostClient, type HostClientError, type HostClientOptions } from "./host-client.js";
import { reconnectDelay } from "./host-connection.js";
import { keySubprotocol, type SocketFactory, type WebSocketLike, WS_OPEN } from "./socket.js";
import type { StampedEvent } from "./thread-view.js";

const info: ThreadInfo = {
  id: "thr_1",
  title: "New session",
  cwd: "/w",
  model: "m",
  createdAt: "",
  updatedAt: "",
};
const wireError = {
  type: "invalid_request_error",
  code: "invalid_request",
  message: "No such thread.",
  param: null,
};

/** A socket the test drives: it opens, delivers frames and closes when told to. */
class FakeSocket implements WebSocketLike {
  readyState = 0;
  readonly sent: Record<string, unknown>[] = [];
  onopen: WebSocketLike["onopen"] = null;
  onmessage: WebSocketLike["onmessage"] = null;
  onclose: WebSocketLike["onclose"] = null;
  onerror: WebSocketLike["onerror"] = null;
  private sentWaiters: (() => void)[] = [];

  constructor(
    readonly url: string,
    readonly protocols: string[],
    readonly headers: Record<string, string>,
  ) {}

  send(data: string): void {
    this.sent.push(JSON.parse(data) as Record<string, unknown>);
    for (const waiter of this.sentWaiters.splice(0)) waiter();
  }

  close(): void {
    this.drop();
  }

  open(): void {
    this.readyState = WS_OPEN;
    this.onopen?.({});
  }

  receive(frame: object): void {
    this.onmessage?.({ data: JSON.stringify(frame) });
  }

  drop(): void {
    if (this.readyState === 3) return;
    this.readyState = 3;
    this.onclose?.({ code: 1006, reason: "" });
  }

  /** The last frame sent, once `count` frames were sent. */
  async nthSent(count: number): Promise<Record<string, unknown>> {
    while (this.sent.length < count) await new Promise<void>((resolve) => this.sentWaiters.push(resolve));
    return this.sent[count - 1]!;
  }
}

function harness(options: Partial<HostClientOptions> = {}) {
  const sockets: FakeSocket[] = [];
  let created: (() => void)[] = [];
  const createSocket: SocketFactory = (url, protocols, headers) => {
    const socket = new FakeSocket(url, protocols, headers);
    sockets.push(socket);
    for (const waiter of created.splice(0)) waiter();
    return socket;
  };
  const client = new HostClient({
    url: "ws://host/v1/agent",
    createSocket,
    reconnectDelayMs: 1,
    ...options,
  });
  const events: StampedEvent[] = [];
  const resets: string[] = [];
  client.on("event", (event) => events.push(event));
  client.on("reset", (threadId) => resets.push(threadId));
  return {
    client,
    sockets,
    events,
    resets,
    /** The `n`th socket (1-based), once created. */
    async socket(n: number): Promise<FakeSocket> {
      while (sockets.length < n) await new Promise<void>((resolve) => created.push(resolve));
      return sockets[n - 1]!;
    },
    async connected(): Promise<FakeSocket> {
      const connecting = client.connect();
      const socket = sockets.at(-1)!;
      socket.open();
      await connecting;
      return socket;
    },
    reset() {
      created = [];
    },
  };
}

function stamped(event: object, seq: number, epoch = "ep_1"): object {
  return { ...event, thread_id: "thr_1", seq, epoch };
}

describe("connecting", () => {
  test("offers spark.v1 and sends the key as a bearer header (Node)", async () => {
    const h = harness({ apiKey: "sk-1" });
    const socket = await h.connected();
    expect(socket.protocols).toEqual(["spark.v1"]);
    expect(socket.headers).toEqual({ Authorization: "Bearer sk-1" });
    expect(h.client.status).toBe("open");
  });

  test("a browser offers the key as a subprotocol: base64url of its UTF-8 bytes", async () => {
    const h = harness({ apiKey: "kéy+/?", keyAsSubprotocol: true });
    const socket = await h.connected();
    expect(socket.protocols).toEqual(["spark.v1", "spark.key.a8OpeSsvPw"]);
    expect(socket.headers).toEqual({});
    expect(keySubprotocol("kéy+/?")).toBe("spark.key.a8OpeSsvPw");
  });

  test("the first connection failing is one connect_failed error, with the socket's reason", async () => {
    const h = harness();
    const connecting = h.client.connect();
    const socket = h.sockets[0]!;
    socket.onerror?.({ message: "ECONNREFUSED" });
    socket.drop();
    await expect(connecting).rejects.toMatchObject({ code: "connect_failed", message: "ECONNREFUSED" });
    expect(h.client.status).toBe("closed");
  });

  test("with retryFirstConnect, a failed first connection is retried until one opens", async () => {
    const h = harness({ retryFirstConnect: true });
    const connecting = h.client.connect();
    h.sockets[0]!.drop();
    expect(h.client.status).toBe("reconnecting");
    (await h.socket(2)).open();
    await connecting;
    expect(h.client.status).toBe("open");
    h.client.dispose();
  });

  test("a request while not connected throws not_connected", async () => {
    const h = harness();
    await expect(h.client.request({ type: "turn.interrupt", thread_id: "thr_1" })).rejects.toMatchObject({
      code: "not_connected",
    });
  });
});

describe("request ids", () => {
  test("every request carries a distinct request_id; the ack resolves it", async () => {
    const h = harness();
    const socket = await h.connected();
    const started = h.client.startThread();
    const frame = await socket.nthSent(1);
    expect(frame).toEqual({ type: "thread.start", request_id: "r1" });
    socket.receive(stamped({ type: "thread.started", thread: info }, 0));
    socket.receive({ type: "ack", request_id: "r1", thread_id: "thr_1" });
    expect(await started).toEqual(info);
    const turn = h.client.request({ type: "turn.start", thread_id: "thr_1", input: "hi" });
    expect(await socket.nthSent(2)).toEqual({
      type: "turn.start",
      thread_id: "thr_1",
      input: "hi",
      request_id: "r2",
    });
    socket.receive({ type: "ack", request_id: "r2", thread_id: "thr_1", turn_id: "turn_1" });
    await expect(turn).resolves.toMatchObject({ thread_id: "thr_1", turn_id: "turn_1" });
  });

  test("an error carrying a request id rejects that request only; others keep waiting", async () => {
    const h = harness();
    const socket = await h.connected();
    socket.receive({ type: "ack", request_id: "r0" });
    const steer = h.client.request({ type: "turn.steer", thread_id: "thr_1", input: "a" });
    const queue = h.client.request({ type: "turn.queue", thread_id: "thr_1", input: "b" });
    socket.receive({ type: "error", status: 404, request_id: "r2", error: wireError });
    await expect(queue).rejects.toMatchObject({
      code: "host_error",
      wire: wireError,
      status: 404,
      message: "No such thread.",
    });
    socket.receive({ type: "ack", request_id: "r1" });
    await expect(steer).resolves.toMatchObject({ request_id: "r1" });
  });

  test("an error answering no pending request is emitted as an error event", async () => {
    const h = harness();
    const socket = await h.connected();
    const errors: unknown[] = [];
    h.client.on("error", (error) => errors.push(error));
    socket.receive({ type: "error", request_id: "r99", error: wireError });
    expect(errors).toEqual([wireError]);
  });

  test("an event of another face's request does not settle this one; an ack of no request is dropped", async () => {
    const h = harness();
    const socket = await h.connected();
    socket.receive(stamped({ type: "thread.started", thread: info }, 0));
    socket.receive({ type: "ack", request_id: "other" });
    let settled = false;
    const steer = h.client.request({ type: "turn.steer", thread_id: "thr_1", input: "a" }).then(() => {
      settled = true;
    });
    socket.receive(stamped({ type: "turn.steered", turn_id: "t1", input: "from the browser" }, 1));
    await Promise.resolve();
    expect(settled).toBe(false);
    socket.receive({ type: "ack", request_id: "r1" });
    await steer;
    expect(settled).toBe(true);
  });

  test("a request unanswered in time rejects with timeout", async () => {
    const h = harness({ requestTimeoutMs: 5 });
    await h.connected();
    await expect(h.client.request({ type: "turn.interrupt", thread_id: "thr_1" })).rejects.toMatchObject({
      code: "timeout",
    });
  });

  test("a closed connection fails pending requests with disconnected", async () => {
    const h = harness();
    const socket = await h.connected();
    const pending = h.client.request({ type: "turn.interrupt", thread_id: "thr_1" });
    socket.drop();
    await expect(pending).rejects.toMatchObject({ code: "disconnected" });
    h.client.dispose();
  });
});

describe("answers without a pending request", () => {
  test("an error without an id (a frame too broken to carry one) rejects no request: it is an error event", async () => {
    const h = harness();
    const socket = await h.connected();
    const errors: unknown[] = [];
    h.client.on("error", (error) => errors.push(error));
    let settled = false;
    const steer = h.client.request({ type: "turn.steer", thread_id: "thr_1", input: "a" }).finally(() => {
      settled = true;
    });
    socket.receive({ type: "error", error: wireError });
    expect(errors).toEqual([wireError]);
    await Promise.resolve();
    expect(settled).toBe(false);
    socket.receive({ type: "ack", request_id: "r1" });
    await expect(steer).resolves.toMatchObject({ request_id: "r1" });
  });

  test("an event alone does not settle a request: only its ack does", async () => {
    const h = harness();
    const socket = await h.connected();
    let settled = false;
    const turn = h.client.request({ type: "turn.start", thread_id: "thr_1", input: "hi" }).finally(() => {
      settled = true;
    });
    socket.receive(stamped({ type: "thread.started", thread: info }, 0));
    socket.receive(stamped({ type: "turn.started", turn_id: "t1", input: "hi" }, 1));
    await Promise.resolve();
    expect(settled).toBe(false);
    socket.receive({ type: "ack", request_id: "r1", thread_id: "thr_1" });
    await expect(turn).resolves.toMatchObject({ request_id: "r1" });
  });

  test("forget tells the host (thread.unsubscribe) so it can let the thread go", async () => {
    const h = harness();
    const socket = await h.connected();
    h.client.forget("thr_1");
    expect(await socket.nthSent(1)).toEqual({
      type: "thread.unsubscribe",
      thread_id: "thr_1",
      request_id: "r1",
    });
  });
});

describe("following a thread", () => {
  test("resumeThread resolves with the info of the replay once acked, and delivers the replay", async () => {
    const h = harness();
    const socket = await h.connected();
    const resumed = h.client.resumeThread("thr_1");
    expect(await socket.nthSent(1)).toEqual({
      type: "thread.resume",
      thread_id: "thr_1",
      after_seq: -1,
      request_id: "r1",
    });
    socket.receive(stamped({ type: "thread.started", thread: info }, 0));
    socket.receive(stamped({ type: "turn.started", turn_id: "t1", input: "hi" }, 1));
    socket.receive({ type: "ack", request_id: "r1", thread_id: "thr_1" });
    expect(await resumed).toEqual(info);
    expect(h.events.map((event) => event.seq)).toEqual([0, 1]);
  });

  test("a failed resume stops following the thread: its later events are not delivered", async () => {
    const h = harness();
    const socket = await h.connected();
    const resumed = h.client.resumeThread("thr_1");
    socket.receive({ type: "error", request_id: "r1", error: wireError });
    await expect(resumed).rejects.toMatchObject({ code: "host_error", message: "No such thread." });
    socket.receive(stamped({ type: "turn.started", turn_id: "t1", input: "hi" }, 1));
    expect(h.events).toEqual([]);
    expect(h.client.lastSeq("thr_1")).toBe(-1);
  });

  test("an ack of a thread never announced is a host_error", async () => {
    const h = harness();
    const socket = await h.connected();
    const started = h.client.startThread();
    socket.receive({ type: "ack", request_id: "r1", thread_id: "thr_9" });
    await expect(started).rejects.toMatchObject({ code: "host_error" });
  });
});

describe("listing", () => {
  test("list(workspace) sends the workspace and resolves, on the ack, with the thread.list before it", async () => {
    const h = harness();
    const socket = await h.connected();
    const listed = h.client.list("/w");
    expect(await socket.nthSent(1)).toEqual({ type: "thread.list", workspace: "/w", request_id: "r1" });
    socket.receive({ type: "thread.list", threads: [info] });
    socket.receive({ type: "ack", request_id: "r1" });
    expect(await listed).toEqual([info]);
  });
});

describe("reconnecting", () => {
  async function followed() {
    const h = harness();
    const socket = await h.connected();
    const started = h.client.startThread();
    socket.receive(stamped({ type: "thread.started", thread: info }, 0));
    socket.receive({ type: "ack", request_id: "r1", thread_id: "thr_1" });
    await started;
    socket.receive(stamped({ type: "turn.started", turn_id: "t1", input: "hi" }, 1));
    return { h, socket };
  }

  test("resumes with after_seq and epoch; replayed events are delivered exactly once", async () => {
    const { h, socket } = await followed();
    socket.drop();
    expect(h.client.status).toBe("reconnecting");
    const next = await h.socket(2);
    next.open();
    expect(await next.nthSent(1)).toMatchObject({
      type: "thread.resume",
      thread_id: "thr_1",
      after_seq: 1,
      epoch: "ep_1",
    });
    next.receive(stamped({ type: "turn.started", turn_id: "t1", input: "hi" }, 1));
    next.receive(stamped({ type: "turn.queued", input: "q" }, 2));
    expect(h.events.map((event) => event.seq)).toEqual([0, 1, 2]);
    expect(h.client.lastSeq("thr_1")).toBe(2);
  });

  test("an event of another epoch: the thread resets and is replayed from its start", async () => {
    const { h, socket } = await followed();
    socket.receive(stamped({ type: "turn.queued", input: "q" }, 0, "ep_2"));
    expect(h.resets).toEqual(["thr_1"]);
    expect(await socket.nthSent(2)).toMatchObject({
      type: "thread.resume",
      thread_id: "thr_1",
      after_seq: -1,
    });
    socket.receive(stamped({ type: "turn.queued", input: "early" }, 1, "ep_2"));
    socket.receive(stamped({ type: "thread.started", thread: info }, 0, "ep_2"));
    expect(h.events.map((event) => [event.type, event.epoch])).toEqual([
      ["thread.started", "ep_1"],
      ["turn.started", "ep_1"],
      ["thread.started", "ep_2"],
    ]);
  });

  test("a history reset is delivered and announced as a reset", async () => {
    const { h, socket } = await followed();
    socket.receive(stamped({ type: "thread.history", items: [], reset: true, thread: info }, 7, "ep_2"));
    expect(h.resets).toEqual(["thr_1"]);
    expect(h.events.at(-1)).toMatchObject({ type: "thread.history", seq: 7 });
    expect(h.client.lastSeq("thr_1")).toBe(7);
  });

  test("backoff doubles from the first delay up to 5 s, spread by ±25%", () => {
    expect([0, 1, 2, 3].map((attempt) => reconnectDelay(attempt, 10, 0.5))).toEqual([10, 20, 40, 80]);
    expect(reconnectDelay(20, 10, 0.5)).toBe(5000);
    expect(reconnectDelay(0, 100, 0)).toBe(75);
    expect(reconnectDelay(0, 100, 0.999_999)).toBe(125);
    expect(reconnectDelay(20, 10, 0)).toBe(3750);
  });

  test("each failed try waits longer before the next", async () => {
    let fail = false;
    const sockets: FakeSocket[] = [];
    const client = new HostClient({
      url: "ws://host/v1/agent",
      reconnectDelayMs: 10,
      createSocket: (url, protocols, headers) => {
        if (fail) throw new Error("refused");
        const socket = new FakeSocket(url, protocols, headers);
        sockets.push(socket);
        return socket;
      },
    });
    const delays: number[] = [];
    const fourTries = new Promise<void>((resolve) =>
      client.on("log", (line) => {
        const match = /^Reconnecting in (\d+) ms$/.exec(line);
        if (match) delays.push(Number(match[1]));
        if (delays.length === 4) resolve();
      }),
    );
    const connecting = client.connect();
    sockets[0]!.open();
    await connecting;
    fail = true;
    sockets[0]!.drop();
    await fourTries;
    client.dispose();
    // 10, 20, 40, 80 ms, each within ±25%.
    delays.forEach((delay, attempt) => {
      expect(delay).toBeGreaterThanOrEqual(Math.floor(10 * 2 ** attempt * 0.75));
      expect(delay).toBeLessThanOrEqual(Math.ceil(10 * 2 ** attempt * 1.25));
    });
  });

  test("dispose closes for good and is idempotent", async () => {
    const h = harness();
    const socket = await h.connected();
    h.client.dispose();
    h.client.dispose();
    expect(h.client.status).toBe("closed");
    expect(socket.readyState).toBe(3);
    await expect(h.client.connect()).rejects.toMatchObject({
      code: "not_connected",
    } satisfies Partial<HostClientError>);
  });
});

describe("the host's MCP servers (mcp.servers)", () => {
  const servers: McpServerInfo[] = [
    {
      name: "everything",
      state: "ready",
      transport: "stdio",
      source: "user",
      trusted: false,
      tools: ["mcp__everything__echo"],
    },
  ];

  test("the latest list is kept (not per thread) and announced; it survives a reconnect", async () => {
    const h = harness();
    const lists: McpServerInfo[][] = [];
    h.client.on("mcp", (list) => lists.push(list));
    expect(h.client.mcpServers).toEqual([]);
    const socket = await h.connected();
    socket.receive({ type: "mcp.servers", servers });
    const failed = [{ ...servers[0]!, state: "failed", tools: [], error: "exited with code 1" }];
    socket.receive({ type: "mcp.servers", servers: failed });
    expect(lists).toEqual([servers, failed]);
    expect(h.client.mcpServers).toEqual(failed);
    socket.drop();
    expect(h.client.mcpServers).toEqual(failed);
    // No thread event came of it.
    expect(h.events).toEqual([]);
  });

  test("a list that does not match the schema is ignored and logged; the last good one stays", async () => {
    const h = harness();
    const logs: string[] = [];
    h.client.on("log", (line) => logs.push(line));
    const lists: McpServerInfo[][] = [];
    h.client.on("mcp", (list) => lists.push(list));
    const socket = await h.connected();
    socket.receive({ type: "mcp.servers", servers });
    socket.receive({ type: "mcp.servers", servers: [{ ...servers[0]!, state: "exploded" }] });
    socket.receive({ type: "mcp.servers" });
    expect(lists).toEqual([servers]);
    expect(h.client.mcpServers).toEqual(servers);
    expect(logs.filter((line) => line.startsWith("Ignored an mcp.servers event"))).toEqual([
      "Ignored an mcp.servers event: servers[0].state is not one of starting, ready, failed, stopped",
      "Ignored an mcp.servers event: servers is not an array",
    ]);
  });
});

describe("forking", () => {
  test("forkThread sends thread.fork and resolves with the fork the host announced; a refusal rejects", async () => {
    const h = harness();
    const socket = await h.connected();
    const forking = h.client.forkThread("thr_1", "msg_2");
    const sent = await socket.nthSent(1);
    expect(sent).toMatchObject({ type: "thread.fork", thread_id: "thr_1", item_id: "msg_2" });
    const fork = { ...info, id: "thr_2", title: "Fork of New session" };
    socket.receive({ type: "thread.started", thread: fork, thread_id: "thr_2", seq: 0, epoch: "ep_1" });
    socket.receive({ type: "ack", request_id: sent.request_id, thread_id: "thr_2" });
    await expect(forking).resolves.toEqual(fork);
    expect(h.events.map((event) => [event.type, event.thread_id])).toEqual([["thread.started", "thr_2"]]);

    const whole = h.client.forkThread("thr_1");
    const again = await socket.nthSent(2);
    expect(again).not.toHaveProperty("item_id");
    socket.receive({
      type: "error",
      request_id: again.request_id,
      error: { ...wireError, message: "A turn is running; fork once it ends.", param: "thread_id" },
    });
    await expect(whole).rejects.toMatchObject({
      code: "host_error",
      message: "A turn is running; fork once it ends.",
    });
  });
});
