import { createServer } from "node:net";
import { describe, expect, test } from "vitest";
import { ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import { startTestServer } from "../server/test-support/test-server.js";
import { ResponsesClient } from "./responses-client.js";
import {
  collect,
  deltas,
  readUntil,
  STEERED_REPLY,
  steerableEngine,
  types,
} from "./test-support/client-test-kit.js";
import { FrontProxy } from "./test-support/front-proxy.js";

const isDelta = (event: { type: string }) => event.type === "response.output_text.delta";

describe("ResponsesClient over HTTP/SSE", () => {
  test("webSocket:false streams over SSE without a notice", async () => {
    await using t = await startTestServer(new ScriptedEngine({ script: [{ text: "one two three" }] }));
    const notices: string[] = [];
    await using client = await ResponsesClient.connect({
      baseUrl: `${t.url}/v1/`,
      webSocket: false,
      onNotice: (n) => notices.push(n),
    });
    expect(client.transport).toBe("http");
    const stream = client.create({ model: "scripted", input: "count" });
    const events = await collect(stream);
    expect(types(events)[0]).toBe("response.created");
    expect(events.at(-1)?.type).toBe("response.completed");
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(deltas(events)).toBe("one two three");
    expect((await stream.final).usage?.output_tokens).toBe(3);
    expect(notices).toEqual([]);

    // Requests are independent: chaining goes through the server's store.
    const next = await client.create({ input: "more", previous_response_id: (await stream.final).id }).final;
    expect(next.usage?.input_tokens_details.cached_tokens).toBeGreaterThan(0);
  });

  test("a refused upgrade falls back to HTTP/SSE with one notice", async () => {
    await using t = await startTestServer(new ScriptedEngine());
    await using proxy = await FrontProxy.start(t.url, "refuse");
    const notices: string[] = [];
    await using client = await ResponsesClient.connect({
      baseUrl: `${proxy.url}/v1`,
      onNotice: (n) => notices.push(n),
    });
    expect(client.transport).toBe("http");
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/^WebSocket unavailable \(.*404.*\); using HTTP\/SSE$/);
    expect(deltas(await collect(client.create({ input: "one" })))).toBe("You said: one");
    expect(deltas(await collect(client.create({ input: "two" })))).toBe("You said: two");
    expect(notices).toHaveLength(1);
    expect(proxy.upgradeAttempts).toBe(1);
  });

  test("an upgrade that never opens falls back within the connect timeout", async () => {
    await using t = await startTestServer(new ScriptedEngine());
    await using proxy = await FrontProxy.start(t.url, "hang");
    const notices: string[] = [];
    await using client = await ResponsesClient.connect({
      baseUrl: `${proxy.url}/v1`,
      connectTimeoutMs: 300,
      onNotice: (n) => notices.push(n),
    });
    expect(proxy.upgradeAttempts).toBe(1);
    expect(client.transport).toBe("http");
    expect(notices).toEqual(["WebSocket unavailable (no answer within 300 ms); using HTTP/SSE"]);
    expect((await client.create({ input: "hi" }).final).status).toBe("completed");
  });

  test("a server that accepts connections and never answers: connect still returns", async () => {
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    try {
      const port = (silent.address() as { port: number }).port;
      const client = await ResponsesClient.connect({
        baseUrl: `http://127.0.0.1:${port}/v1`,
        connectTimeoutMs: 300,
      });
      expect(client.transport).toBe("http");
      await client.close();
    } finally {
      silent.close();
    }
  });

  test("an unreachable server: the notice names the cause and create fails with connection_failed", async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const notices: string[] = [];
    await using client = await ResponsesClient.connect({
      baseUrl: `http://127.0.0.1:${port}/v1`,
      onNotice: (n) => notices.push(n),
    });
    expect(notices[0]).toContain("ECONNREFUSED");
    await expect(client.create({ input: "hi" }).final).rejects.toMatchObject({ code: "connection_failed" });
  });

  test("cancel() aborts the request; the stream ends incomplete/cancelled with what was seen", async () => {
    await using t = await startTestServer(steerableEngine());
    await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1`, webSocket: false });
    const stream = client.create({ input: "go" });
    const iterator = stream[Symbol.asyncIterator]();
    const head = await readUntil(iterator, isDelta);
    stream.cancel();
    const rest = [];
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) rest.push(next.value);
    const all = [...head, ...rest];
    const last = all.at(-1)!;
    expect(last.type).toBe("response.incomplete");
    expect(last.sequence_number).toBe(all.at(-2)!.sequence_number + 1);
    const response = await stream.final;
    expect(response.status).toBe("incomplete");
    expect(response.incomplete_details?.reason).toBe("cancelled");
    expect(response.output[0]).toMatchObject({
      type: "message",
      status: "incomplete",
      content: [{ text: deltas(all) }],
    });
    expect((await client.create({ input: "again", max_output_tokens: 1 }).final).status).toBe("incomplete");
  });

  test("breaking out of the loop or aborting the signal cancels the request", async () => {
    await using t = await startTestServer(steerableEngine());
    await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1`, webSocket: false });
    const broken = client.create({ input: "go" });
    for await (const event of broken) if (isDelta(event)) break;
    expect((await broken.final).incomplete_details?.reason).toBe("cancelled");

    const controller = new AbortController();
    const aborted = client.create({ input: "go" }, { signal: controller.signal });
    for await (const event of aborted) if (isDelta(event)) controller.abort();
    expect((await aborted.final).incomplete_details?.reason).toBe("cancelled");
  });

  test("a steer is emulated: abort, then a continuation chained to the partial response", async () => {
    await using t = await startTestServer(steerableEngine());
    await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1`, webSocket: false });
    const stream = client.create({ input: "indent it", instructions: "Be brief.", temperature: 0 });
    const iterator = stream[Symbol.asyncIterator]();
    await readUntil(iterator, isDelta);
    const firstId = stream.responseId!;

    const outcome = await client.steer(stream, "use tabs");
    const rest = [];
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) rest.push(next.value);
    const created = rest.findIndex((e) => e.type === "response.created");
    expect(rest[created]).toMatchObject({ response: { previous_response_id: firstId } });
    const successor = rest.slice(created);
    expect(successor.map((e) => e.sequence_number)).toEqual(successor.map((_, i) => i));
    expect(deltas(successor)).toBe(STEERED_REPLY);
    // Nothing is made up: the aborted response's own end never reached the client.
    expect(rest.filter((e) => e.type === "response.incomplete")).toEqual([]);

    const final = await stream.final;
    expect(outcome).toEqual({ status: "accepted", id: final.id });
    expect(final.status).toBe("completed");
    expect(final.previous_response_id).toBe(firstId);
    expect(final.instructions).toBe("Be brief.");
    expect(final.temperature).toBe(0);
    expect(stream.responseIds).toEqual([firstId, final.id]);
  });

  test("two steers in a row over HTTP end with the last one's reply", async () => {
    await using t = await startTestServer(steerableEngine());
    await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1`, webSocket: false });
    const stream = client.create({ input: "indent it" });
    const iterator = stream[Symbol.asyncIterator]();
    await readUntil(iterator, isDelta);
    const outcomes = await Promise.all([client.steer(stream, "spaces?"), client.steer(stream, "use tabs")]);
    expect(outcomes.map((o) => o.status)).toEqual(["accepted", "accepted"]);
    const rest = [];
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) rest.push(next.value);
    expect(deltas(rest.slice(rest.findLastIndex((e) => e.type === "response.created")))).toBe(STEERED_REPLY);
    expect((await stream.final).status).toBe("completed");
  });

  test("a steer made before the response exists steers it once it does", async () => {
    await using t = await startTestServer(steerableEngine());
    await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1`, webSocket: false });
    const stream = client.create({ input: "indent it" });
    const outcome = client.steer(stream, "use tabs");
    const events = await collect(stream);
    expect(await outcome).toMatchObject({ status: "accepted" });
    expect(deltas(events.slice(events.findLastIndex((e) => e.type === "response.created")))).toBe(
      STEERED_REPLY,
    );
    expect(stream.responseIds).toHaveLength(2);
  });

  test("steering over HTTP needs store: true", async () => {
    await using t = await startTestServer(steerableEngine());
    await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1`, webSocket: false });
    const stream = client.create({ input: "go", store: false });
    const iterator = stream[Symbol.asyncIterator]();
    await readUntil(iterator, isDelta);
    expect(await client.steer(stream, "use tabs")).toMatchObject({
      status: "failed",
      code: "invalid_request",
    });
    stream.cancel();
    expect((await stream.final).incomplete_details?.reason).toBe("cancelled");
  });

  test("close() ends running requests with client_closed", async () => {
    await using t = await startTestServer(steerableEngine());
    const client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1`, webSocket: false });
    const stream = client.create({ input: "go" });
    const iterator = stream[Symbol.asyncIterator]();
    await readUntil(iterator, isDelta);
    await client.close();
    await client.close();
    await expect(stream.final).rejects.toMatchObject({ code: "client_closed" });
    await expect(client.create({ input: "x" }).final).rejects.toMatchObject({ code: "client_closed" });
  });

  test("an HTTP error answer rejects with the wire code, status and param", async () => {
    await using t = await startTestServer(new ScriptedEngine());
    await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1`, webSocket: false });
    const stream = client.create({ input: "hi", previous_response_id: "resp_missing" });
    await expect(collect(stream)).rejects.toMatchObject({
      name: "ClientError",
      code: "previous_response_not_found",
      status: 400,
      param: "previous_response_id",
    });
    await expect(client.create({ input: "hi", temperature: 7 }).final).rejects.toMatchObject({
      status: 400,
      param: "temperature",
    });
  });

  test("a connection dropped mid-stream gives connection_lost; the next create works", async () => {
    await using t = await startTestServer(steerableEngine());
    await using proxy = await FrontProxy.start(t.url, "refuse");
    await using client = await ResponsesClient.connect({ baseUrl: `${proxy.url}/v1` });
    const stream = client.create({ input: "go" });
    const iterator = stream[Symbol.asyncIterator]();
    await readUntil(iterator, isDelta);
    proxy.dropConnections();
    await expect(stream.final).rejects.toMatchObject({ code: "connection_lost" });
    expect((await client.create({ input: "again", max_output_tokens: 1 }).final).status).toBe("incomplete");
  });

  test("when the WebSocket drops and cannot reconnect, the next create falls back to HTTP once", async () => {
    await using t = await startTestServer(steerableEngine());
    await using proxy = await FrontProxy.start(t.url, "relay");
    const notices: string[] = [];
    await using client = await ResponsesClient.connect({
      baseUrl: `${proxy.url}/v1`,
      onNotice: (n) => notices.push(n),
    });
    expect(client.transport).toBe("websocket");
    const stream = client.create({ input: "go" });
    const iterator = stream[Symbol.asyncIterator]();
    await readUntil(iterator, isDelta);
    proxy.upgrades = "refuse";
    proxy.dropConnections();
    await expect(stream.final).rejects.toMatchObject({ code: "connection_lost" });

    const next = client.create({ input: "again", max_output_tokens: 2 });
    expect(deltas(await collect(next))).toBe("w0 w1");
    expect(client.transport).toBe("http");
    expect(notices).toHaveLength(1);
    expect((await client.create({ input: "more", max_output_tokens: 1 }).final).status).toBe("incomplete");
    expect(notices).toHaveLength(1);
  });
});
