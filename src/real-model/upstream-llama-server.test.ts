import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { findLlamaServer } from "../bench/internal/llama-server-binary.js";
import { PeerServer } from "../bench/internal/peer-server.js";
import { FETCH_ROUTER, startVllmRouter, vllmRouterDir } from "../engine/upstream/test-support/vllm-router.js";
import { UpstreamEngine } from "../engine/upstream/upstream-engine.js";
import { startTestServer } from "../server/test-support/test-server.js";
import { FETCH_SMOLLM2, smollm2Path } from "./test-support/smollm2.js";

/**
 * Spark's upstream engine in front of two real llama-server replicas serving SmolLM2: behind vLLM's
 * router (session routing by the header Spark sends), and on its own (prefix-aware routing). Which
 * replica served a request is read from the replicas' own `/metrics`.
 */
const model = smollm2Path();
const llamaServer = findLlamaServer();
const routerDir = vllmRouterDir();
const skip = !model
  ? `no SmolLM2 (${FETCH_SMOLLM2})`
  : "missing" in llamaServer
    ? llamaServer.missing
    : undefined;
if (skip) console.log(`upstream llama-server tests skipped: ${skip}`);
if (!routerDir) console.log(`the router test is skipped: no vllm-router (${FETCH_ROUTER})`);

let replicas: PeerServer[] = [];
beforeAll(async () => {
  if (skip || "missing" in llamaServer) return;
  replicas = await Promise.all(
    [0, 1].map(() =>
      PeerServer.start({
        binary: llamaServer.binary,
        modelPath: model!,
        contextSize: 4096,
        threads: 1,
        extraArgs: ["--jinja", "--metrics"],
      }),
    ),
  );
}, 120_000);
afterAll(async () => {
  for (const replica of replicas) await replica[Symbol.asyncDispose]();
});

/** Each replica's count of predicted tokens, from its own `/metrics`. */
async function predicted(): Promise<number[]> {
  return Promise.all(
    replicas.map(async (replica) => {
      const text = await (await fetch(`${replica.baseUrl.replace(/\/v1$/, "")}/metrics`)).text();
      const line = text.split("\n").find((l) => l.startsWith("llamacpp:tokens_predicted_total "));
      return Number(line?.split(" ")[1] ?? Number.NaN);
    }),
  );
}

/** Runs `request` and says which replica served it (the one whose predicted count moved). */
async function servedBy<T>(request: () => Promise<T>): Promise<{ result: T; replica: number }> {
  const before = await predicted();
  const result = await request();
  const after = await predicted();
  const moved = after.flatMap((n, i) => (n > before[i]! ? [i] : []));
  expect(moved).toHaveLength(1);
  return { result, replica: moved[0]! };
}

/** About 600 tokens, starting with the topic so that two topics share almost nothing. */
const systemPrompt = (topic: string) =>
  `${topic}: you are a coding assistant for this project. ` +
  Array.from({ length: 40 }, (_, i) => `Rule ${i + 1}: keep answers about ${topic} short and exact.`).join(
    " ",
  );

describe.skipIf(skip !== undefined)("Spark in front of two llama-server replicas", () => {
  test.skipIf(!routerDir)(
    "behind vLLM's router, each conversation stays on one replica (the session header)",
    async () => {
      await using router = await startVllmRouter(
        routerDir!,
        replicas.map((replica) => replica.baseUrl.replace(/\/v1$/, "")),
      );
      await using engine = await UpstreamEngine.create({
        replicas: [router.url],
        model: "smol",
        healthChecks: false,
        contextSize: 4096,
      });
      await using spark = await startTestServer(engine);
      const homes = new Map<number, Set<number>>();
      for (let conversation = 0; conversation < 4; conversation++) {
        let previous: string | undefined;
        for (let turn = 0; turn < 3; turn++) {
          const { result, replica } = await servedBy(() =>
            spark.client.responses.create({
              model: "smol",
              input: `Conversation ${conversation}, turn ${turn}: name a fruit.`,
              max_output_tokens: 4,
              ...(previous ? { previous_response_id: previous } : {}),
            }),
          );
          expect(result.status).not.toBe("failed");
          previous = result.id;
          homes.set(conversation, (homes.get(conversation) ?? new Set()).add(replica));
        }
      }
      for (const [, served] of homes) expect(served.size).toBe(1);
    },
    300_000,
  );

  test("a new conversation sharing a long system prompt goes to the replica that has it (prefix routing), not the idle one", async () => {
    const ask = (engine: UpstreamEngine, topic: string, question: string) =>
      servedBy(async () => {
        await using spark = await startTestServer(engine);
        return await spark.client.responses.create({
          model: "smol",
          instructions: systemPrompt(topic),
          input: question,
          max_output_tokens: 4,
        });
      });
    const options = {
      replicas: replicas.map((r) => r.baseUrl),
      model: "smol",
      healthIntervalMs: 0,
      contextSize: 4096,
    };

    // Load alone: the second conversation goes to the other (idle) replica and recomputes the prompt
    // (all but the chat template's first tokens).
    await using leastLoaded = new UpstreamEngine({ ...options, routing: "least-loaded" });
    const a = await ask(leastLoaded, "parser", "What is a token?");
    const b = await ask(leastLoaded, "parser", "What is a grammar?");
    expect(b.replica).not.toBe(a.replica);
    expect(b.result.usage?.input_tokens_details.cached_tokens ?? 0).toBeLessThan(
      (b.result.usage?.input_tokens ?? 0) * 0.1,
    );

    await using prefix = new UpstreamEngine({ ...options, routing: "prefix" });
    const c = await ask(prefix, "renderer", "What is a frame?");
    const d = await ask(prefix, "renderer", "What is a pixel?");
    expect(d.replica).toBe(c.replica);
    expect(d.result.usage?.input_tokens_details.cached_tokens).toBeGreaterThan(
      (d.result.usage?.input_tokens ?? 0) * 0.8,
    );
  }, 300_000);
});
