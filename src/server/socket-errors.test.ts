import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import { clientFrame, closePayload, MALFORMED_FRAMES, RawWebSocket } from "./test-support/raw-websocket.js";
import { startTestServer, type TestServer } from "./test-support/test-server.js";

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer(new ScriptedEngine(), {
    // An endpoint that adds no error listener of its own: the server's must be enough.
    sockets: { "/v1/bare": () => {} },
  });
});
afterAll(async () => {
  await t.server.close();
});

async function expectServing(): Promise<void> {
  const response = await t.client.responses.create({ model: "scripted", input: "ping" });
  expect(response.output_text).toBe("You said: ping");
}

describe("a malformed frame closes its connection with the right code, and the server serves on", () => {
  for (const path of ["/v1/responses", "/v1/bare"]) {
    for (const frame of MALFORMED_FRAMES) {
      test(`${path}, ${frame.name}: ${frame.closeCode}`, async () => {
        const raw = await RawWebSocket.open(t.url, path);
        expect(raw.accepted).toBe(true);
        raw.write(frame.bytes());
        expect((await raw.ended).closeCode).toBe(frame.closeCode);
        await expectServing();
      });
    }
  }
});

describe("refused upgrades", () => {
  for (const [name, path, options, status] of [
    ["an unknown path", "/v1/nowhere", {}, 404],
    ["a request target that is not a path", "constructor", {}, 400],
    ["a bad Sec-WebSocket-Key", "/v1/responses", { key: "short" }, 400],
    ["a foreign origin", "/v1/responses", { headers: { origin: "https://evil.example" } }, 403],
  ] as const) {
    test(`${name} is ${status}`, async () => {
      const raw = await RawWebSocket.open(t.url, path, options);
      expect(raw.accepted).toBe(false);
      expect((await raw.ended).refusedStatus).toBe(status);
      await expectServing();
    });
  }

  test("a peer that resets before reading the refusal leaves the server serving", async () => {
    const raw = await RawWebSocket.open(t.url, "/v1/nowhere");
    raw.destroy();
    await raw.ended;
    await expectServing();
  });
});

describe("Responses WebSocket event types are own names only", () => {
  for (const type of ["constructor", "toString", "__proto__"]) {
    test(`${JSON.stringify(type)} is unknown_event_type and the connection stays open`, async () => {
      const raw = await RawWebSocket.open(t.url, "/v1/responses");
      raw.write(clientFrame(0x1, Buffer.from(JSON.stringify({ type }))));
      raw.write(clientFrame(0x8, closePayload(1000)));
      const outcome = await raw.ended;
      expect(outcome.closeCode).toBe(1000);
      expect(outcome.messages.map((m) => JSON.parse(m))).toMatchObject([
        { type: "error", status: 400, error: { type: "invalid_request_error", code: "unknown_event_type" } },
      ]);
    });
  }
});
