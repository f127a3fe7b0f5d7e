import { ResponsesWS } from "openai/resources/responses/ws";
import { describe, expect, test } from "vitest";
import { ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import { MAX_LANES } from "./socket-lane.js";
import { startTestServer } from "./test-support/test-server.js";
import { EventLog } from "./test-support/ws-events.js";

type AnyEvent = { type: string; [key: string]: unknown };

const TERMINAL = ["response.completed", "response.incomplete", "response.failed"];
const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(" ");

/** An echoing engine slow enough that a long answer is still streaming when the next create arrives. */
const slowEcho = () => new ScriptedEngine({ tokensPerSecond: 200 });

function responseId(event: AnyEvent): string | undefined {
  return (event.response as { id?: string } | undefined)?.id;
}

/** The events of the lane `streamId`, with every one checked to carry it. */
function laneEvents(log: EventLog, streamId: string): AnyEvent[] {
  return log.events.filter((event) => event.stream_id === streamId);
}

/** A lane's stream of one response is whole and in order: created first, terminal last, text complete. */
function expectWholeResponse(events: AnyEvent[], text: string): void {
  expect(events[0]?.type).toBe("response.created");
  expect(TERMINAL).toContain(events.at(-1)?.type);
  const id = responseId(events[0]!);
  expect(events.filter((e) => e.response).every((e) => responseId(e) === id)).toBe(true);
  const sequence = events.map((e) => e.sequence_number as number);
  expect(sequence).toEqual([...sequence].sort((a, b) => a - b));
  const streamed = events.map((e) => (e.type === "response.output_text.delta" ? e.delta : "")).join("");
  expect(streamed).toBe(text);
}

describe("Responses WebSocket lanes (stream_id) with the SDK's ResponsesWS", () => {
  test("two lanes stream side by side on one socket, each whole, in order and tagged", async () => {
    await using t = await startTestServer(slowEcho());
    const ws = new ResponsesWS(t.client);
    const log = new EventLog(ws);
    try {
      const long = words(40);
      ws.send({ type: "response.create", model: "scripted", input: long, stream_id: "a" });
      ws.send({ type: "response.create", model: "scripted", input: "short one", stream_id: "b" });
      const bDone = log.next((e) => e.stream_id === "b" && TERMINAL.includes(e.type));
      const aDone = log.next((e) => e.stream_id === "a" && TERMINAL.includes(e.type));
      expect((await bDone).type).toBe("response.completed");
      // Lane b finished while lane a was still streaming: they ran side by side.
      expect(log.events.some((e) => e.stream_id === "a" && TERMINAL.includes(e.type))).toBe(false);
      expect((await aDone).type).toBe("response.completed");

      expect(log.events.every((e) => e.stream_id === "a" || e.stream_id === "b")).toBe(true);
      expectWholeResponse(laneEvents(log, "a"), `You said: ${long}`);
      expectWholeResponse(laneEvents(log, "b"), "You said: short one");
      // One connection: sequence numbers run 0, 1, 2, ... across both lanes.
      expect(log.events.map((e) => e.sequence_number)).toEqual(log.events.map((_, i) => i));
      expect(log.errors).toEqual([]);
    } finally {
      ws.close();
    }
  });

  test("an error on one lane carries its stream_id and status; the other lane runs to completion", async () => {
    await using t = await startTestServer(slowEcho());
    const ws = new ResponsesWS(t.client);
    const log = new EventLog(ws);
    try {
      ws.send({ type: "response.create", model: "scripted", input: words(30), stream_id: "a" });
      await log.next((e) => e.stream_id === "a" && e.type === "response.output_text.delta");
      ws.send({
        type: "response.create",
        model: "scripted",
        input: "x",
        previous_response_id: "resp_missing",
        stream_id: "b",
      });
      const error = await log.type("error");
      expect(error).toMatchObject({
        stream_id: "b",
        status: 400,
        error: { type: "invalid_request_error", code: "previous_response_not_found" },
      });
      const done = await log.next((e) => e.stream_id === "a" && TERMINAL.includes(e.type));
      expect(done.type).toBe("response.completed");
      expectWholeResponse(laneEvents(log, "a"), `You said: ${words(30)}`);
      // The failed lane is free again at once.
      ws.send({ type: "response.create", model: "scripted", input: "again", stream_id: "b" });
      const again = await log.next((e) => e.stream_id === "b" && TERMINAL.includes(e.type));
      expect(again.type).toBe("response.completed");
    } finally {
      ws.close();
    }
  });

  test("creates on one lane run first-in-first-out: the second starts after the first ends", async () => {
    await using t = await startTestServer(slowEcho());
    const ws = new ResponsesWS(t.client);
    const log = new EventLog(ws);
    try {
      ws.send({ type: "response.create", model: "scripted", input: words(20), stream_id: "lane.1" });
      ws.send({ type: "response.create", model: "scripted", input: "second", stream_id: "lane.1" });
      const first = await log.next((e) => e.stream_id === "lane.1" && TERMINAL.includes(e.type));
      const second = await log.next(
        (e) => e.stream_id === "lane.1" && TERMINAL.includes(e.type),
        log.events.indexOf(first) + 1,
      );
      const events = laneEvents(log, "lane.1");
      const createdAt = events.flatMap((e, i) => (e.type === "response.created" ? [i] : []));
      expect(createdAt).toHaveLength(2);
      expect(createdAt[1]).toBeGreaterThan(events.indexOf(first));
      expectWholeResponse(events.slice(0, events.indexOf(first) + 1), `You said: ${words(20)}`);
      expectWholeResponse(events.slice(createdAt[1]), "You said: second");
      expect(second.type).toBe("response.completed");
    } finally {
      ws.close();
    }
  });

  test("without stream_id: no stream_id on events, and a second create is still refused", async () => {
    await using t = await startTestServer(slowEcho());
    const ws = new ResponsesWS(t.client);
    const log = new EventLog(ws);
    try {
      ws.send({ type: "response.create", model: "scripted", input: words(20) });
      await log.type("response.output_text.delta");
      ws.send({ type: "response.create", model: "scripted", input: "two" });
      expect(await log.type("error")).toMatchObject({ status: 409, error: { code: "response_in_progress" } });
      expect((await log.end()).type).toBe("response.completed");
      expect(log.events.some((e) => "stream_id" in e)).toBe(false);
    } finally {
      ws.close();
    }
  });

  test("an invalid stream_id is refused with a 400 error event that echoes nothing", async () => {
    await using t = await startTestServer(slowEcho());
    const ws = new ResponsesWS(t.client);
    const log = new EventLog(ws);
    try {
      for (const bad of ["", "has space", "x".repeat(257), "ünïcode"]) {
        const mark = log.events.length;
        ws.sendRaw(
          JSON.stringify({ type: "response.create", model: "scripted", input: "x", stream_id: bad }),
        );
        const error = await log.type("error", mark);
        expect(error).toMatchObject({ status: 400, error: { code: "invalid_event", param: "stream_id" } });
        expect(error).not.toHaveProperty("stream_id");
      }
    } finally {
      ws.close();
    }
  });

  test(`past ${MAX_LANES} busy lanes a create is refused (429 limit_reached); cancel stops one lane only`, async () => {
    await using t = await startTestServer(new ScriptedEngine({ tokensPerSecond: 50 }));
    const ws = new ResponsesWS(t.client);
    const log = new EventLog(ws);
    try {
      for (let i = 0; i < MAX_LANES; i++)
        ws.send({ type: "response.create", model: "scripted", input: words(50), stream_id: `l${i}` });
      ws.send({ type: "response.create", model: "scripted", input: "one too many", stream_id: "extra" });
      expect(await log.type("error")).toMatchObject({
        stream_id: "extra",
        status: 429,
        error: { code: "limit_reached", type: "rate_limit_error" },
      });
      ws.sendRaw(JSON.stringify({ type: "response.cancel", stream_id: "l3" }));
      const cancelled = await log.next((e) => e.stream_id === "l3" && TERMINAL.includes(e.type));
      expect(cancelled).toMatchObject({
        type: "response.incomplete",
        response: { incomplete_details: { reason: "cancelled" } },
      });
      expect(log.events.filter((e) => TERMINAL.includes(e.type))).toHaveLength(1);
      ws.sendRaw(JSON.stringify({ type: "response.cancel", stream_id: "idle" }));
      expect(await log.next((e) => e.type === "error" && e.stream_id === undefined)).toMatchObject({
        status: 400,
        error: { code: "response_not_active", param: "stream_id" },
      });
    } finally {
      ws.close();
    }
  });
});

describe("a client that vanishes with lanes running", () => {
  test("every lane's response is cancelled and its admission slot freed; the server serves the next client", async () => {
    await using t = await startTestServer(new ScriptedEngine({ tokensPerSecond: 50 }), {
      admission: { maxConcurrent: 2 },
    });
    const gone = new ResponsesWS(t.client);
    const goneLog = new EventLog(gone);
    // Each would stream for a minute: the next client gets a slot only if they are cancelled.
    gone.send({ type: "response.create", model: "scripted", input: words(3000), stream_id: "a" });
    gone.send({ type: "response.create", model: "scripted", input: words(3000), stream_id: "b" });
    await goneLog.next((e) => e.stream_id === "a" && e.type === "response.output_text.delta");
    await goneLog.next((e) => e.stream_id === "b" && e.type === "response.output_text.delta");
    // No close frame: the TCP connection just ends, as when a laptop lid shuts.
    gone.socket.terminate();

    // Both slots were held by the vanished lanes; a new client runs only once they are released.
    const next = new ResponsesWS(t.client);
    const log = new EventLog(next);
    try {
      next.send({ type: "response.create", model: "scripted", input: "hi", stream_id: "x" });
      next.send({ type: "response.create", model: "scripted", input: "there", stream_id: "y" });
      const x = await log.next((e) => e.stream_id === "x" && TERMINAL.includes(e.type), 0);
      const y = await log.next((e) => e.stream_id === "y" && TERMINAL.includes(e.type), 0);
      expect([x.type, y.type]).toEqual(["response.completed", "response.completed"]);
    } finally {
      next.close();
    }
  });
});

describe("the connection lifetime cap", () => {
  test("at the cap: the API's error event, running responses finish, then the socket closes; a new one works", async () => {
    await using t = await startTestServer(new ScriptedEngine({ tokensPerSecond: 40 }), {
      connectionLifetimeMs: 300,
    });
    const ws = new ResponsesWS(t.client);
    const log = new EventLog(ws);
    const closed = new Promise<number>((resolve) => ws.on("close", (code) => resolve(code)));
    ws.send({ type: "response.create", model: "scripted", input: words(30), stream_id: "a" });
    const limit = await log.next((e) => e.type === "error");
    expect(limit).toMatchObject({
      status: 400,
      error: { type: "invalid_request_error", code: "websocket_connection_limit_reached" },
    });
    expect(limit).not.toHaveProperty("stream_id");
    // New work is refused with the same code, on its lane; the running response goes on.
    ws.send({ type: "response.create", model: "scripted", input: "late", stream_id: "b" });
    expect(await log.next((e) => e.type === "error" && e.stream_id === "b")).toMatchObject({
      status: 400,
      error: { code: "websocket_connection_limit_reached" },
    });
    const done = await log.next((e) => e.stream_id === "a" && TERMINAL.includes(e.type));
    expect(done.type).toBe("response.completed");
    expectWholeResponse(laneEvents(log, "a"), `You said: ${words(30)}`);
    expect(await closed).toBe(1001);

    const fresh = new ResponsesWS(t.client);
    const freshLog = new EventLog(fresh);
    try {
      fresh.send({ type: "response.create", model: "scripted", input: "hi" });
      expect((await freshLog.end()).type).toBe("response.completed");
    } finally {
      fresh.close();
    }
  });
});
