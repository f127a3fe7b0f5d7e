import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import { startTestServer, type TestServer } from "./test-support/test-server.js";

/** A raw POST with exactly the headers given (no Content-Type unless one is passed). */
function post(url: string, path: string, body: string, contentType?: string) {
  return new Promise<{ status: number; json: Record<string, unknown> }>((resolve, reject) => {
    const req = request(`${url}${path}`, {
      method: "POST",
      headers: contentType === undefined ? {} : { "content-type": contentType },
    });
    req.on("response", (res) => {
      let text = "";
      res.on("data", (chunk) => {
        text += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

const bodies = {
  "/v1/responses": JSON.stringify({ model: "scripted", input: "hi" }),
  "/v1/chat/completions": JSON.stringify({ model: "scripted", messages: [{ role: "user", content: "hi" }] }),
};

describe("a POST body must be declared JSON", () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(new ScriptedEngine());
  });
  afterAll(async () => {
    await t.server.close();
  });

  for (const [path, body] of Object.entries(bodies)) {
    for (const contentType of [
      "text/plain",
      "text/plain;charset=UTF-8",
      "text/html",
      "image/png",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/json; charset=latin1",
      "application/jsonx",
      "application/+json",
      undefined,
    ]) {
      test(`${path} refuses ${contentType ?? "a missing Content-Type"} with 415`, async () => {
        const reply = await post(t.url, path, body, contentType);
        expect(reply.status).toBe(415);
        expect(reply.json.error).toMatchObject({
          type: "invalid_request_error",
          code: "unsupported_media_type",
        });
      });
    }

    for (const contentType of [
      "application/json",
      "application/json; charset=utf-8",
      'Application/JSON; Charset="UTF-8"',
      "application/vnd.api+json",
    ]) {
      test(`${path} accepts ${contentType}`, async () => {
        const reply = await post(t.url, path, body, contentType);
        expect(reply.status).toBe(200);
        expect(reply.json.error ?? null).toBeNull();
      });
    }
  }

  test("the media type is checked before the body: a refused body is not parsed", async () => {
    const reply = await post(t.url, "/v1/responses", "{not json", "text/plain");
    expect(reply.json.error).toMatchObject({ code: "unsupported_media_type" });
  });
});
