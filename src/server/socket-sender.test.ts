import type { AddressInfo } from "node:net";
import { expect, test } from "vitest";
import { WebSocket, WebSocketServer } from "ws";
import type { ResponseStreamEvent } from "../protocol/responses.js";
import { SocketSender } from "./socket-sender.js";

/** A real server-side socket and the client talking to it; the client's reading can be paused. */
async function connectedPair() {
  const wss = new WebSocketServer({ port: 0 });
  await new Promise((resolve) => wss.once("listening", resolve));
  const accepted = new Promise<WebSocket>((resolve) => wss.once("connection", resolve));
  const client = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`);
  const received: { sequence_number: number; delta: string }[] = [];
  client.on("message", (data) => received.push(JSON.parse(String(data))));
  const [server] = await Promise.all([accepted, new Promise((resolve) => client.once("open", resolve))]);
  const raw = (client as unknown as { _socket: { pause(): void; resume(): void } })._socket;
  return {
    server,
    client,
    received,
    raw,
    [Symbol.asyncDispose]: async () => {
      client.terminate();
      server.terminate();
      await new Promise((resolve) => wss.close(resolve));
    },
  };
}

const delta = (text: string): ResponseStreamEvent => ({
  type: "response.output_text.delta",
  item_id: "msg_1",
  output_index: 0,
  content_index: 0,
  delta: text,
  logprobs: [],
});

/** Sends 64 KiB deltas until the socket holds unsent bytes (the kernel's buffers are full). */
function fillUntilBusy(sender: SocketSender): number {
  let sent = 0;
  while (!sender.isBusy()) {
    if (sent >= 4096) throw new Error("the socket never backed up");
    sender.send(delta("x".repeat(65_536)));
    sent++;
  }
  return sent;
}

test("a backed-up socket calls back once the client reads again, with gapless sequence numbers", async () => {
  await using pair = await connectedPair();
  const sender = new SocketSender(pair.server);
  pair.raw.pause();
  const sent = fillUntilBusy(sender);
  let drained = false;
  const whenDrained = new Promise<void>((resolve) =>
    sender.whenDrained(() => {
      drained = true;
      resolve();
    }),
  );
  expect(drained).toBe(false);
  pair.raw.resume();
  await whenDrained;
  expect(sender.isBusy()).toBe(false);
  expect(pair.server.bufferedAmount).toBeLessThanOrEqual(16 * 1024);

  sender.send(delta("last"));
  while (pair.received.length < sent + 1)
    await new Promise((resolve) => pair.client.once("message", resolve));
  expect(pair.received.map((event) => event.sequence_number)).toEqual([...Array(sent + 1).keys()]);
  expect(pair.received.at(-1)?.delta).toBe("last");
});

test("a socket that closes while backed up calls back, and later sends are dropped", async () => {
  await using pair = await connectedPair();
  const sender = new SocketSender(pair.server);
  pair.raw.pause();
  fillUntilBusy(sender);
  const whenDrained = new Promise<void>((resolve) => sender.whenDrained(resolve));
  pair.client.terminate();
  await whenDrained;
  expect(pair.server.readyState).not.toBe(pair.server.OPEN);
  expect(sender.isBusy()).toBe(false);
  expect(() => sender.send(delta("after close"))).not.toThrow();
});

test("a socket with room calls back on a later turn", async () => {
  await using pair = await connectedPair();
  const sender = new SocketSender(pair.server);
  expect(sender.isBusy()).toBe(false);
  let called = false;
  const whenDrained = new Promise<void>((resolve) =>
    sender.whenDrained(() => {
      called = true;
      resolve();
    }),
  );
  expect(called).toBe(false);
  await whenDrained;
  expect(called).toBe(true);
});
