import { randomUUID } from "node:crypto";
import OpenAI from "openai";
import { ResponsesWS } from "openai/resources/responses/ws";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import { RedisResponseStore } from "./store/redis-response-store.js";
import { parseRedisUrl } from "./store/redis-url.js";
import { NO_REDIS_REASON, sharedTestRedis } from "./test-support/redis-server.js";
import { startTestServer, type TestServer } from "./test-support/test-server.js";
import { EventLog } from "./test-support/ws-events.js";

type Usage = { input_tokens_details: { cached_tokens: number; chain_recomputed?: true } };

/** Two servers (each its own scripted engine, so its own KV state) sharing one Redis store. */
describe.skipIf(NO_REDIS_REASON !== null)(
  `two servers sharing a Redis store${NO_REDIS_REASON ? ` (skipped: ${NO_REDIS_REASON})` : ""}`,
  () => {
    let redis: { url: string; stop(): Promise<void> };
    let a: TestServer;
    let b: TestServer;

    beforeAll(async () => {
      redis = await sharedTestRedis();
      const prefix = `test:${randomUUID()}:`;
      const shared = () => RedisResponseStore.create({ target: parseRedisUrl(redis.url), prefix });
      a = await startTestServer(new ScriptedEngine(), { store: await shared() });
      b = await startTestServer(new ScriptedEngine(), { store: await shared() });
    });
    afterAll(async () => {
      await a?.[Symbol.asyncDispose]();
      await b?.[Symbol.asyncDispose]();
      await redis?.stop();
    });

    async function socketTo(server: TestServer): Promise<{ ws: ResponsesWS; log: EventLog } & Disposable> {
      const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
      const ws = new ResponsesWS(client);
      const log = new EventLog(ws);
      await new Promise<void>((resolve, reject) => {
        ws.socket.once("open", () => resolve());
        ws.socket.once("error", reject);
      });
      return { ws, log, [Symbol.dispose]: () => ws.close() };
    }

    test("a WebSocket on one server continues a response stored over HTTP on the other", async () => {
      const first = await a.client.responses.create({ model: "scripted", input: "one" });
      using socket = await socketTo(b);
      const from = socket.log.events.length;
      socket.ws.send({
        type: "response.create",
        model: "scripted",
        input: "two",
        previous_response_id: first.id,
      });
      const end = (await socket.log.end(from)) as {
        type: string;
        response: { output: unknown[]; usage: Usage };
      };
      expect(end.type).toBe("response.completed");
      expect(end.response.usage.input_tokens_details).toEqual({ cached_tokens: 0, chain_recomputed: true });
      // And back: the WebSocket's response reached the store, so HTTP on the first server goes on from it.
      const id = (end.response as unknown as { id: string }).id;
      const third = await a.client.responses.create({
        model: "scripted",
        input: "three",
        previous_response_id: id,
      });
      expect(third.output_text).toBe("You said: three");
      expect(third.usage?.input_tokens_details).toMatchObject({ chain_recomputed: true });
    });

    test("creates on one lane keep their order while the first one's chain is read from the store", async () => {
      const first = await a.client.responses.create({ model: "scripted", input: "one" });
      using socket = await socketTo(b);
      const from = socket.log.events.length;
      socket.ws.send({
        type: "response.create",
        model: "scripted",
        input: "after the stored one",
        previous_response_id: first.id,
        stream_id: "lane",
      } as never);
      socket.ws.send({
        type: "response.create",
        model: "scripted",
        input: "second in line",
        stream_id: "lane",
      } as never);
      await socket.log.next(
        (e) =>
          e.type === "response.completed" &&
          socket.log.since(from).filter((x) => x.type === "response.completed").length === 2,
        from,
      );
      const texts = socket.log
        .since(from)
        .filter((e) => e.type === "response.output_text.done")
        .map((e) => e.text);
      expect(texts).toEqual(["You said: after the stored one", "You said: second in line"]);
    });

    test("an unknown previous_response_id is previous_response_not_found; a draft resolves its chain from the store", async () => {
      using socket = await socketTo(b);
      const from = socket.log.events.length;
      socket.ws.send({
        type: "response.create",
        model: "scripted",
        input: "x",
        previous_response_id: "resp_missing",
      });
      const error = (await socket.log.type("error", from)) as unknown as { error: { code: string } };
      expect(error.error.code).toBe("previous_response_not_found");
      const first = await a.client.responses.create({ model: "scripted", input: "one" });
      const later = socket.log.events.length;
      socket.ws.send({ type: "spark.draft", draft: "what about", previous_response_id: first.id } as never);
      const accepted = await socket.log.next(
        (e) => e.type === "spark.draft.accepted" || e.type === "error",
        later,
      );
      expect(accepted.type).toBe("spark.draft.accepted");
    });
  },
);
