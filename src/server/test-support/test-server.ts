import OpenAI from "openai";
import type { Engine } from "../../engine/engine.js";
import { ModelRegistry } from "../model-registry.js";
import { SparkServer, type SparkServerOptions } from "../spark-server.js";

export interface TestServer extends AsyncDisposable {
  server: SparkServer;
  client: OpenAI;
  url: string;
}

/** A real server on a loopback port serving `engine`, with an SDK client pointed at it. */
export async function startTestServer(
  engine: Engine,
  options: Partial<SparkServerOptions> = {},
): Promise<TestServer> {
  const models = new ModelRegistry();
  models.add(engine.info.id, engine);
  const server = await SparkServer.start({ models, ...options });
  const client = new OpenAI({
    baseURL: `${server.url}/v1`,
    apiKey: options.apiKeys?.[0] ?? "unused",
    maxRetries: 0,
  });
  return {
    server,
    client,
    url: server.url,
    async [Symbol.asyncDispose]() {
      await server.close();
    },
  };
}
