import { describe, expect, test } from "vitest";
import WebSocket from "ws";
import { ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import { startTestServer } from "./test-support/test-server.js";

type Event = { type: string; [key: string]: unknown };

/** A raw Responses WebSocket that records events and waits for them. */
async function responsesSocket(url: string) {
  const ws = new WebSocket(`${url.replace("http", "ws")}/v1/responses`);
  const events: Event[] = [];
  const waiters: { match: (e: Event) => boolean; resolve: (e: Event) => void }[] = [];
  ws.on("message", (data) => {
    const event = JSON.parse(String(data)) as Event;
    events.push(event);
    for (const waiter of [...waiters])
      if (waiter.match(event)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(event);
      }
  });
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  const next = (match: (e: Event) => boolean) =>
    new Promise<Event>((resolve) => waiters.push({ match, resolve }));
  return {
    ws,
    /** Sends `response.create` and resolves with its final or error event. */
    create(body: object): Promise<Event> {
      const end = next(
        (e) => e.type === "response.completed" || e.type === "response.failed" || e.type === "error",
      );
      ws.send(JSON.stringify({ type: "response.create", model: "scripted", ...body }));
      return end;
    },
  };
}

/** The status and JSON body of a refused upgrade. */
function refusedUpgrade(url: string): Promise<{ status: number; body: { error: { code: string } } }> {
  const ws = new WebSocket(`${url.replace("http", "ws")}/v1/responses`);
  return new Promise((resolve, reject) => {
    ws.once("open", () => reject(new Error("the upgrade was accepted")));
    ws.once("unexpected-response", (_req, res) => {
      let text = "";
      res.on("data", (chunk) => {
        text += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
  });
}

describe("memory bounds of the server", () => {
  test("WebSocket connections past maxConnections are refused at the upgrade with 503 server_busy", async () => {
    const closed: Promise<void>[] = [];
    await using t = await startTestServer(new ScriptedEngine(), {
      maxConnections: 1,
      sockets: {
        "/v1/agent": (ws) => closed.push(new Promise((resolve) => ws.once("close", () => resolve()))),
      },
    });
    const first = new WebSocket(`${t.url.replace("http", "ws")}/v1/agent`);
    await new Promise((resolve) => first.once("open", resolve));
    const refused = await refusedUpgrade(t.url);
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe("server_busy");
    first.close();
    await closed[0];
    const second = await responsesSocket(t.url);
    expect((await second.create({ input: "hi" })).type).toBe("response.completed");
    second.ws.close();
  });

  test("a connection's cache of store:false responses is bounded in bytes", async () => {
    await using t = await startTestServer(new ScriptedEngine(), { connectionCacheBytes: 64 });
    const socket = await responsesSocket(t.url);
    const first = (await socket.create({ input: "hello", store: false })).response as { id: string };
    const follow = await socket.create({ input: "again", store: false, previous_response_id: first.id });
    expect(follow).toMatchObject({ type: "error", error: { code: "previous_response_not_found" } });
    socket.ws.close();

    await using roomy = await startTestServer(new ScriptedEngine());
    const other = await responsesSocket(roomy.url);
    const kept = (await other.create({ input: "hello", store: false })).response as { id: string };
    expect((await other.create({ input: "again", store: false, previous_response_id: kept.id })).type).toBe(
      "response.completed",
    );
    other.ws.close();
  });

  test("the response store is bounded in bytes: the oldest stored response is evicted first", async () => {
    await using t = await startTestServer(new ScriptedEngine(), { storeBytes: 6_000 });
    const ids: string[] = [];
    for (const input of ["a", "b", "c"])
      ids.push((await t.client.responses.create({ model: "scripted", input: input.repeat(2_000) })).id);
    await expect(
      t.client.responses.create({ model: "scripted", input: "next", previous_response_id: ids[0]! }),
    ).rejects.toMatchObject({ status: 400, code: "previous_response_not_found" });
    const latest = await t.client.responses.create({
      model: "scripted",
      input: "next",
      previous_response_id: ids[2]!,
    });
    expect(latest.status).toBe("completed");
  });
});
