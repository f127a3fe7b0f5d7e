import { describe, expect, test } from "vitest";
import { ResponsesClient } from "./responses-client.js";
import { collect, deltas, readUntil, types } from "./test-support/client-test-kit.js";
import { delta, fakeSocketServer, response } from "./test-support/fake-socket-server.js";

// Steer answers a scripted engine cannot produce on cue (a steer waiting for tool outputs, a steer
// racing the end of a response), scripted frame by frame.

const isDelta = (event: { type: string }) => event.type === "response.output_text.delta";

describe("steer answers over WebSocket", () => {
  test("a steer waiting for tool outputs ends the stream with the steered response and steer.pending", async () => {
    await using server = await fakeSocketServer((event, send) => {
      if (event.type === "response.create" && event.input === "go") {
        send({ type: "response.created", response: response("resp_1") });
        send(delta("calling"));
      } else if (event.type === "response.steer") {
        const steer = { id: "steer_1", previous_response_id: "resp_1" };
        send({ type: "response.steer.accepted", steer });
        send({
          type: "response.incomplete",
          response: { ...response("resp_1", "incomplete"), incomplete_details: { reason: "steered" } },
        });
        send({
          type: "response.steer.pending",
          reason: "waiting_for_required_input",
          required_input: [{ type: "function_call_output", call_id: "call_1", name: "ls" }],
          steer,
        });
      } else if (event.type === "response.create") {
        send({ type: "response.created", response: response("resp_2") });
        send({ type: "response.completed", response: response("resp_2", "completed") });
      }
    });
    await using client = await ResponsesClient.connect({ baseUrl: server.url });
    const stream = client.create({ input: "go" });
    const iterator = stream[Symbol.asyncIterator]();
    await readUntil(iterator, isDelta);
    expect(await client.steer(stream, "use tabs")).toEqual({ status: "accepted", id: "steer_1" });
    const rest = [];
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) rest.push(next.value);
    expect(types(rest)).toEqual(["response.steer.accepted", "response.incomplete", "response.steer.pending"]);
    const final = await stream.final;
    expect(final).toMatchObject({ id: "resp_1", incomplete_details: { reason: "steered" } });
    expect((await client.create({ input: "outputs" }).final).id).toBe("resp_2");
  });

  test("a steer that races the end of the response fails, and the next create is not confused", async () => {
    await using server = await fakeSocketServer((event, send) => {
      if (event.type === "response.create" && event.input === "go") {
        send({ type: "response.created", response: response("resp_1") });
        send(delta("almost done"));
      } else if (event.type === "response.steer") {
        // The response had already ended when the steer arrived.
        send({ type: "response.completed", response: response("resp_1", "completed") });
        send({
          type: "response.steer.failed",
          error: { type: "invalid_request_error", code: "response_already_completed", message: "too late" },
          steer: { previous_response_id: "resp_1", input: event.input },
        });
      } else if (event.type === "response.create") {
        send({ type: "response.created", response: response("resp_2") });
        send(delta("next"));
        send({ type: "response.completed", response: response("resp_2", "completed") });
      }
    });
    await using client = await ResponsesClient.connect({ baseUrl: server.url });
    const stream = client.create({ input: "go" });
    const iterator = stream[Symbol.asyncIterator]();
    await readUntil(iterator, isDelta);
    const outcome = client.steer(stream, "late");
    const next = client.create({ input: "again" });
    expect(await outcome).toEqual({
      status: "failed",
      code: "response_already_completed",
      message: "too late",
    });
    expect((await stream.final).status).toBe("completed");
    expect(deltas(await collect(next))).toBe("next");
  });

  test("a steer sent before response.created waits for the response id", async () => {
    const steers: unknown[] = [];
    await using server = await fakeSocketServer((event, send) => {
      if (event.type === "response.create") {
        send({ type: "response.created", response: response("resp_1") });
      } else if (event.type === "response.steer") {
        steers.push(event.previous_response_id);
        send({ type: "response.steer.accepted", steer: { id: "steer_1", previous_response_id: "resp_1" } });
        send({ type: "response.incomplete", response: response("resp_1", "incomplete") });
        send({
          type: "response.created",
          response: { ...response("resp_2"), previous_response_id: "resp_1" },
        });
        send({ type: "response.completed", response: response("resp_2", "completed") });
      }
    });
    await using client = await ResponsesClient.connect({ baseUrl: server.url });
    const stream = client.create({ input: "go" });
    expect(await client.steer(stream, "now")).toMatchObject({ status: "accepted" });
    expect((await stream.final).id).toBe("resp_2");
    expect(steers).toEqual(["resp_1"]);
    expect(stream.responseIds).toEqual(["resp_1", "resp_2"]);
  });

  test("a steer that reaches a response already steered by another retries on the successor", async () => {
    const targets: unknown[] = [];
    await using server = await fakeSocketServer((event, send) => {
      if (event.type === "response.create") {
        send({ type: "response.created", response: response("resp_1") });
        send(delta("a"));
        return;
      }
      if (event.type !== "response.steer") return;
      targets.push(event.previous_response_id);
      if (targets.length === 1) {
        send({ type: "response.steer.accepted", steer: { id: "steer_1", previous_response_id: "resp_1" } });
        send({ type: "response.incomplete", response: response("resp_1", "incomplete") });
        send({ type: "response.created", response: response("resp_2") });
      } else if (event.previous_response_id === "resp_1") {
        send({
          type: "response.steer.failed",
          error: { type: "invalid_request_error", code: "response_already_completed", message: "ended" },
          steer: { previous_response_id: "resp_1", input: event.input },
        });
      } else {
        send({ type: "response.steer.accepted", steer: { id: "steer_2", previous_response_id: "resp_2" } });
        send({ type: "response.incomplete", response: response("resp_2", "incomplete") });
        send({ type: "response.created", response: response("resp_3") });
        send({ type: "response.completed", response: response("resp_3", "completed") });
      }
    });
    await using client = await ResponsesClient.connect({ baseUrl: server.url });
    const stream = client.create({ input: "go" });
    await stream.started;
    const outcomes = await Promise.all([client.steer(stream, "one"), client.steer(stream, "two")]);
    expect(outcomes).toEqual([
      { status: "accepted", id: "steer_1" },
      { status: "accepted", id: "steer_2" },
    ]);
    expect(targets).toEqual(["resp_1", "resp_1", "resp_2"]);
    expect((await stream.final).id).toBe("resp_3");
    expect(stream.responseIds).toEqual(["resp_1", "resp_2", "resp_3"]);
  });

  test("a late steer.failed for an earlier steer does not answer a newer one", async () => {
    let steers = 0;
    await using server = await fakeSocketServer((event, send) => {
      if (event.type === "response.create" && event.input === "go") {
        send({ type: "response.created", response: response("resp_1") });
        send(delta("a"));
      } else if (event.type === "response.steer" && ++steers === 1) {
        send({ type: "response.steer.accepted", steer: { id: "steer_1", previous_response_id: "resp_1" } });
      } else if (event.type === "response.steer") {
        // The response failed before the second steer was read; the first steer fails with it.
        send({ type: "response.failed", response: response("resp_1", "failed") });
        send({
          type: "response.steer.failed",
          error: { type: "invalid_request_error", code: "successor_creation_failed", message: "failed" },
          steer: { id: "steer_1", previous_response_id: "resp_1", input: "one" },
        });
        send({
          type: "response.steer.failed",
          error: { type: "invalid_request_error", code: "response_already_completed", message: "ended" },
          steer: { previous_response_id: "resp_1", input: event.input },
        });
      }
    });
    await using client = await ResponsesClient.connect({ baseUrl: server.url });
    const stream = client.create({ input: "go" });
    await stream.started;
    expect(await client.steer(stream, "one")).toEqual({ status: "accepted", id: "steer_1" });
    const second = client.steer(stream, "two");
    await expect(stream.final).rejects.toMatchObject({ code: "server_error" });
    expect(await second).toMatchObject({ status: "failed", code: "response_already_completed" });
  });
});
