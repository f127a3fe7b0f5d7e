import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, test } from "vitest";
import { ResponsesClient } from "./responses-client.js";
import { collect, deltas } from "./test-support/client-test-kit.js";
import { answeringCreates, delta, response } from "./test-support/fake-socket-server.js";

// A real Spark server never breaks the protocol, so these tests use a fake that does on purpose.

const good = [
  { type: "response.created", response: response("resp_ok") },
  delta("fine"),
  { type: "response.completed", response: response("resp_ok", "completed") },
];

describe("protocol errors", () => {
  test("a gap in sequence_number fails the stream; the next create gets a fresh connection", async () => {
    await using server = await answeringCreates([
      [
        JSON.stringify({ type: "response.created", response: response("resp_1"), sequence_number: 0 }),
        JSON.stringify({ ...delta("a"), sequence_number: 2 }),
      ],
      good,
    ]);
    await using client = await ResponsesClient.connect({ baseUrl: server.url });
    const stream = client.create({ input: "x" });
    await expect(collect(stream)).rejects.toMatchObject({
      code: "protocol_error",
      message: expect.stringContaining("expected 1"),
    });
    expect(deltas(await collect(client.create({ input: "y" })))).toBe("fine");
    expect(server.connections).toBe(2);
  });

  test("a repeated sequence_number fails the stream", async () => {
    await using server = await answeringCreates([
      [
        JSON.stringify({ type: "response.created", response: response("resp_1"), sequence_number: 0 }),
        JSON.stringify({ ...delta("a"), sequence_number: 1 }),
        JSON.stringify({ ...delta("b"), sequence_number: 1 }),
      ],
    ]);
    await using client = await ResponsesClient.connect({ baseUrl: server.url });
    await expect(client.create({ input: "x" }).final).rejects.toMatchObject({
      code: "protocol_error",
      message: expect.stringContaining("repeat"),
    });
  });

  test("a frame that is not JSON fails the stream", async () => {
    await using server = await answeringCreates([["{not json"]]);
    await using client = await ResponsesClient.connect({ baseUrl: server.url });
    await expect(client.create({ input: "x" }).final).rejects.toMatchObject({ code: "protocol_error" });
  });

  test("a second response.created without a steer is a protocol error", async () => {
    await using server = await answeringCreates([
      [
        { type: "response.created", response: response("resp_1") },
        delta("a"),
        { type: "response.created", response: response("resp_2") },
      ],
      good,
    ]);
    await using client = await ResponsesClient.connect({ baseUrl: server.url });
    await expect(client.create({ input: "x" }).final).rejects.toMatchObject({ code: "protocol_error" });
    expect(deltas(await collect(client.create({ input: "y" })))).toBe("fine");
  });

  test("an error answering a cancel that raced the end of a response is not the next create's", async () => {
    await using server = await answeringCreates([
      [
        { type: "response.created", response: response("resp_1") },
        {
          type: "error",
          status: 400,
          error: { type: "invalid_request_error", code: "response_not_active", message: "late", param: null },
        },
        delta("still here"),
        { type: "response.completed", response: response("resp_1", "completed") },
      ],
    ]);
    await using client = await ResponsesClient.connect({ baseUrl: server.url });
    expect(deltas(await collect(client.create({ input: "x" })))).toBe("still here");
  });

  test("an unexpected error event during a response fails its stream with the wire code", async () => {
    await using server = await answeringCreates([
      [
        { type: "response.created", response: response("resp_1") },
        {
          type: "error",
          status: 429,
          error: { type: "rate_limit_error", code: "rate_limit_exceeded", message: "slow down", param: null },
        },
      ],
    ]);
    await using client = await ResponsesClient.connect({ baseUrl: server.url });
    await expect(client.create({ input: "x" }).final).rejects.toMatchObject({
      code: "rate_limit_exceeded",
      status: 429,
    });
  });

  test("over SSE, a gap in sequence_number and a body that ends early are errors", async () => {
    const created = JSON.stringify({ ...good[0], sequence_number: 0 });
    const bodies = [
      `event: response.created\ndata: ${created}\n\ndata: ${JSON.stringify({ ...delta("a"), sequence_number: 5 })}\n\n`,
      `event: response.created\r\ndata: ${created}\r\n\r\n`,
    ];
    let request = 0;
    const http = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(bodies[request++]);
    });
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    try {
      const baseUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}/v1`;
      await using client = await ResponsesClient.connect({ baseUrl, webSocket: false });
      await expect(client.create({ input: "x" }).final).rejects.toMatchObject({ code: "protocol_error" });
      await expect(client.create({ input: "x" }).final).rejects.toMatchObject({ code: "connection_lost" });
    } finally {
      http.closeAllConnections();
      http.close();
    }
  });
});
