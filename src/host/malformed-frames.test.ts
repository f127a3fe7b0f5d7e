import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { MALFORMED_FRAMES, RawWebSocket } from "../server/test-support/raw-websocket.js";
import { connectHost } from "./test-support/host-client.js";
import { type HostedServer, startHostedServer } from "./test-support/hosted-server.js";

let hosted: HostedServer;
beforeAll(async () => {
  hosted = await startHostedServer();
});
afterAll(async () => {
  await hosted[Symbol.asyncDispose]();
});

/** The server still answers HTTP and a new agent-host client still gets a thread. */
async function expectServing(): Promise<void> {
  const health = await fetch(`${hosted.url}/healthz`);
  expect(health.status).toBe(200);
  const client = await connectHost(`${hosted.url.replace("http", "ws")}/v1/agent`);
  client.send({ type: "thread.start" });
  await expect(client.next((e) => e.type === "thread.started")).resolves.toMatchObject({ seq: 0 });
  client.ws.close();
}

describe("a malformed frame on /v1/agent closes that connection, not the server", () => {
  for (const frame of MALFORMED_FRAMES) {
    test(`${frame.name}: close code ${frame.closeCode}`, async () => {
      const raw = await RawWebSocket.open(hosted.url, "/v1/agent");
      expect(raw.accepted).toBe(true);
      raw.write(frame.bytes());
      const outcome = await raw.ended;
      expect(outcome.closeCode).toBe(frame.closeCode);
      await expectServing();
    });
  }

  test("a peer that resets mid-frame leaves the server serving", async () => {
    const raw = await RawWebSocket.open(hosted.url, "/v1/agent");
    raw.write(MALFORMED_FRAMES[0]!.bytes().subarray(0, 3));
    raw.destroy();
    await raw.ended;
    await expectServing();
  });
});

describe("agent-host message types are own names only", () => {
  for (const type of ["constructor", "toString", "__proto__", "hasOwnProperty"]) {
    test(`type ${JSON.stringify(type)} is unknown_event_type, not server_error`, async () => {
      const client = await connectHost(`${hosted.url.replace("http", "ws")}/v1/agent`);
      client.send({ type });
      const error = await client.next((e) => e.type === "error");
      expect(error.error).toMatchObject({ code: "unknown_event_type", type: "invalid_request_error" });
      client.ws.close();
    });
  }
});
