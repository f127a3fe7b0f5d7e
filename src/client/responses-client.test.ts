import { describe, expect, test } from "vitest";
import { ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import { startTestServer } from "../server/test-support/test-server.js";
import { ClientError } from "./client-error.js";
import { ResponsesClient } from "./responses-client.js";
import {
  collect,
  deltas,
  LONG_REPLY,
  readUntil,
  STEERED_REPLY,
  steerableEngine,
  types,
} from "./test-support/client-test-kit.js";
import { FrontProxy } from "./test-support/front-proxy.js";

const isDelta = (event: { type: string }) => event.type === "response.output_text.delta";

describe("ResponsesClient over WebSocket", () => {
  test("streams a response and resolves final with usage and timing", async () => {
    await using t = await startTestServer(
      new ScriptedEngine({ script: [{ text: "one two three" }], tokensPerSecond: 500 }),
    );
    const notices: string[] = [];
    await using client = await ResponsesClient.connect({
      baseUrl: `${t.url}/v1`,
      onNotice: (n) => notices.push(n),
    });
    expect(client.transport).toBe("websocket");

    const stream = client.create({ model: "scripted", input: "count" });
    const events = await collect(stream);
    // The server merges deltas produced in one event-loop turn: compare runs of types.
    expect(types(events).filter((type, i, all) => type !== all[i - 1])).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(deltas(events)).toBe("one two three");
    const response = await stream.final;
    expect(response.status).toBe("completed");
    expect(response.usage?.output_tokens).toBe(3);
    expect(response.timing?.tokens_per_second).toBeGreaterThanOrEqual(0);
    expect(stream.responseId).toBe(response.id);
    expect((await stream.started).id).toBe(response.id);
    expect(stream.done).toBe(true);
    expect(notices).toEqual([]);
  });

  test("sends the API key as a bearer token", async () => {
    await using t = await startTestServer(new ScriptedEngine(), { apiKeys: ["sekret"] });
    await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1`, apiKey: "sekret" });
    expect(client.transport).toBe("websocket");
    expect((await client.create({ input: "hi" }).final).status).toBe("completed");
  });

  test("pre-warms with generate:false, then chains turns with previous_response_id and store:false", async () => {
    await using t = await startTestServer(new ScriptedEngine());
    await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1` });
    const warm = await client.create({
      model: "scripted",
      generate: false,
      store: false,
      input: [{ role: "developer", content: "You are Spark, a coding assistant." }],
    }).final;
    expect(warm.status).toBe("completed");
    expect(warm.output).toEqual([]);

    const firstStream = client.create({
      model: "scripted",
      store: false,
      previous_response_id: warm.id,
      input: "first question",
    });
    expect(deltas(await collect(firstStream))).toBe("You said: first question");
    const first = await firstStream.final;
    expect(first.previous_response_id).toBe(warm.id);
    expect(first.usage?.input_tokens_details.cached_tokens).toBeGreaterThan(0);

    const second = await client.create({ store: false, previous_response_id: first.id, input: "second" })
      .final;
    expect(second.output[0]).toMatchObject({ type: "message", content: [{ text: "You said: second" }] });
  });

  test("a create made while another response runs waits its turn on the connection", async () => {
    await using t = await startTestServer(new ScriptedEngine({ tokensPerSecond: 500 }));
    await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1` });
    const a = client.create({ input: "alpha beta gamma" });
    const b = client.create({ input: "delta" });
    const [eventsA, eventsB] = await Promise.all([collect(a), collect(b)]);
    expect(deltas(eventsA)).toBe("You said: alpha beta gamma");
    expect(deltas(eventsB)).toBe("You said: delta");
    // One connection, numbered once: b's events come after all of a's.
    const last = eventsA.at(-1)!.sequence_number;
    expect(eventsB[0]!.sequence_number).toBe(last + 1);
  });

  test("cancel() stops decoding; the response ends incomplete/cancelled and the connection stays usable", async () => {
    await using t = await startTestServer(steerableEngine());
    await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1` });
    const stream = client.create({ input: "go" });
    const iterator = stream[Symbol.asyncIterator]();
    await readUntil(iterator, isDelta);
    stream.cancel();
    stream.cancel(); // idempotent
    const rest: string[] = [];
    for (let next = await iterator.next(); !next.done; next = await iterator.next())
      rest.push(next.value.type);
    expect(rest.at(-1)).toBe("response.incomplete");
    const response = await stream.final;
    expect(response.status).toBe("incomplete");
    expect(response.incomplete_details?.reason).toBe("cancelled");
    expect(response.usage!.output_tokens).toBeLessThan(2000);

    const next = await client.create({ input: "again", max_output_tokens: 2 }).final;
    expect(next.status).toBe("incomplete");
    expect(next.incomplete_details?.reason).toBe("max_output_tokens");
    expect(client.transport).toBe("websocket");
  });

  test("aborting the signal cancels the response", async () => {
    await using t = await startTestServer(steerableEngine());
    await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1` });
    const controller = new AbortController();
    const stream = client.create({ input: "go" }, { signal: controller.signal });
    const events = [];
    for await (const event of stream) {
      events.push(event);
      if (isDelta(event)) controller.abort();
    }
    expect(events.at(-1)?.type).toBe("response.incomplete");
    expect((await stream.final).incomplete_details?.reason).toBe("cancelled");

    const aborted = client.create({ input: "x" }, { signal: controller.signal });
    await expect(aborted.final).rejects.toMatchObject({ code: "cancelled" });
  });

  test("breaking out of the loop cancels the response; the next create runs", async () => {
    await using t = await startTestServer(steerableEngine());
    await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1` });
    const stream = client.create({ input: "go" });
    for await (const event of stream) if (isDelta(event)) break;
    const response = await stream.final;
    expect(response.incomplete_details?.reason).toBe("cancelled");
    expect(response.usage!.output_tokens).toBeLessThan(2000);

    const next = client.create({ input: "again", max_output_tokens: 3 });
    expect(deltas(await collect(next))).toBe("w0 w1 w2");
  });

  test("a steer continues the same stream with the successor; final is the successor's", async () => {
    await using t = await startTestServer(steerableEngine());
    await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1` });
    const stream = client.create({ input: "indent it", instructions: "Be brief." });
    const iterator = stream[Symbol.asyncIterator]();
    const head = await readUntil(iterator, isDelta);
    const firstId = stream.responseId!;
    expect(head[0]).toMatchObject({ type: "response.created", response: { id: firstId } });

    const outcome = await client.steer(stream, "use tabs");
    expect(outcome).toMatchObject({ status: "accepted", id: expect.stringMatching(/^steer_/) });
    const rest = [];
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) rest.push(next.value);

    const steered = rest.findIndex((e) => e.type === "response.incomplete");
    expect(rest[steered]).toMatchObject({
      response: { id: firstId, incomplete_details: { reason: "steered" } },
    });
    const successor = rest.slice(steered + 1);
    expect(successor[0]).toMatchObject({
      type: "response.created",
      response: { previous_response_id: firstId },
    });
    expect(deltas(successor)).toBe(STEERED_REPLY);
    expect(successor.at(-1)?.type).toBe("response.completed");

    const final = await stream.final;
    expect(final.previous_response_id).toBe(firstId);
    expect(final.instructions).toBe("Be brief.");
    expect(stream.responseIds).toEqual([firstId, final.id]);
    expect(stream.responseId).toBe(final.id);
    // The successor continues from the steered response's state: only the steer is new input.
    expect(final.usage!.input_tokens - final.usage!.input_tokens_details.cached_tokens).toBeLessThanOrEqual(
      3,
    );
  });

  test("two steers in a row both reach the successor", async () => {
    await using t = await startTestServer(steerableEngine());
    await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1` });
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

  test("a steer for a stream still waiting its turn applies once its response starts", async () => {
    await using t = await startTestServer(steerableEngine());
    await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1` });
    const first = client.create({ input: "one" });
    const second = client.create({ input: "two" });
    const outcome = client.steer(second, "use tabs");
    for await (const event of first) if (isDelta(event)) break;
    expect(await outcome).toMatchObject({ status: "accepted" });
    const events = await collect(second);
    expect(deltas(events.slice(events.findLastIndex((e) => e.type === "response.created")))).toBe(
      STEERED_REPLY,
    );
    expect((await first.final).incomplete_details?.reason).toBe("cancelled");
  });

  test("a steer after cancel() fails rather than restarting the response", async () => {
    await using t = await startTestServer(steerableEngine());
    await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1` });
    const stream = client.create({ input: "go" });
    const iterator = stream[Symbol.asyncIterator]();
    await readUntil(iterator, isDelta);
    stream.cancel();
    expect(await client.steer(stream, "use tabs")).toMatchObject({
      status: "failed",
      code: "response_not_active",
    });
    expect((await stream.final).incomplete_details?.reason).toBe("cancelled");
    expect(stream.responseIds).toHaveLength(1);
  });

  test("steering a finished response fails without touching the connection", async () => {
    await using t = await startTestServer(new ScriptedEngine());
    await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1` });
    const stream = client.create({ input: "hi" });
    await stream.final;
    expect(await client.steer(stream, "late")).toMatchObject({ status: "failed" });
    expect((await client.create({ input: "next" }).final).status).toBe("completed");
  });

  test("an error event (unknown previous_response_id) rejects final and the loop with the wire error", async () => {
    await using t = await startTestServer(new ScriptedEngine());
    await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1` });
    const stream = client.create({ input: "hi", previous_response_id: "resp_missing" });
    const seen: string[] = [];
    const thrown = await (async () => {
      try {
        for await (const event of stream) seen.push(event.type);
      } catch (error) {
        return error;
      }
    })();
    expect(thrown).toBeInstanceOf(ClientError);
    expect(thrown).toMatchObject({
      code: "previous_response_not_found",
      status: 400,
      param: "previous_response_id",
    });
    expect(seen).toEqual(["error"]);
    await expect(stream.final).rejects.toBe(thrown);
    await expect(stream.started).rejects.toBe(thrown);
    expect((await client.create({ input: "next" }).final).status).toBe("completed");
  });

  test("response.failed rejects final with the response's error", async () => {
    const engine = new ScriptedEngine({
      script: () => {
        throw new Error("the model fell over");
      },
    });
    await using t = await startTestServer(engine);
    await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1` });
    const stream = client.create({ input: "hi" });
    await expect(collect(stream)).rejects.toMatchObject({ code: "server_error" });
    const error = await stream.final.catch((e: unknown) => e as ClientError);
    expect(error).toBeInstanceOf(ClientError);
    expect((error as ClientError).response?.status).toBe("failed");
    expect((error as ClientError).message).toContain("fell over");
  });

  test("a connection dropped mid-stream gives connection_lost; the next create reconnects", async () => {
    await using t = await startTestServer(steerableEngine());
    await using proxy = await FrontProxy.start(t.url, "relay");
    await using client = await ResponsesClient.connect({ baseUrl: `${proxy.url}/v1` });
    expect(client.transport).toBe("websocket");
    const stream = client.create({ input: "go" });
    const iterator = stream[Symbol.asyncIterator]();
    await readUntil(iterator, isDelta);
    proxy.dropConnections();
    await expect(
      (async () => {
        for (let next = await iterator.next(); !next.done; next = await iterator.next());
      })(),
    ).rejects.toMatchObject({ code: "connection_lost" });
    await expect(stream.final).rejects.toMatchObject({ code: "connection_lost" });

    const next = client.create({ input: "again", max_output_tokens: 2 });
    const events = await collect(next);
    expect(deltas(events)).toBe("w0 w1");
    expect(events[0]!.sequence_number).toBe(0); // a new connection numbers from zero
    expect(client.transport).toBe("websocket");
    expect(proxy.upgradeAttempts).toBe(2);
  });

  test("close() ends running streams with client_closed, is idempotent, and refuses new creates", async () => {
    await using t = await startTestServer(steerableEngine());
    const client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1` });
    const stream = client.create({ input: "go" });
    const queued = client.create({ input: "later" });
    const iterator = stream[Symbol.asyncIterator]();
    await readUntil(iterator, isDelta);
    await Promise.all([client.close(), client.close()]);
    await client[Symbol.asyncDispose]();
    await expect(stream.final).rejects.toMatchObject({ code: "client_closed" });
    await expect(queued.final).rejects.toMatchObject({ code: "client_closed" });
    await expect(client.create({ input: "x" }).final).rejects.toMatchObject({ code: "client_closed" });
  });

  test("a stream of another client cannot be steered", async () => {
    await using t = await startTestServer(new ScriptedEngine({ script: [{ text: LONG_REPLY }] }));
    await using a = await ResponsesClient.connect({ baseUrl: `${t.url}/v1` });
    await using b = await ResponsesClient.connect({ baseUrl: `${t.url}/v1` });
    const stream = a.create({ input: "hi", max_output_tokens: 1 });
    await expect(b.steer(stream, "x")).rejects.toMatchObject({ code: "invalid_request" });
    await stream.final;
  });
});
