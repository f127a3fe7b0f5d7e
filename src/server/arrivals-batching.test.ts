import { LlamaContextSequence } from "node-llama-cpp";
import { ResponsesWS } from "openai/resources/responses/ws";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import type { BatchArrivals } from "../engine/llama/internal/batch-arrivals.js";
import { recordBatches } from "../engine/llama/internal/test-support/batch-recorder.js";
import { LlamaEngine } from "../engine/llama/llama-engine.js";
import { testModelPath } from "../engine/test-support/test-model.js";
import { startTestServer, type TestServer } from "./test-support/test-server.js";
import { EventLog } from "./test-support/ws-events.js";

// The seam of the Responses WebSocket and the engine's batching (BatchArrivals, and the engine
// patch's batch order): unit and model tests are in src/engine/llama/batch-arrivals.test.ts.

describe("requests that arrive together over WebSockets are evaluated together", () => {
  let engine: LlamaEngine;
  let t: TestServer;
  const sockets: { ws: ResponsesWS; log: EventLog }[] = [];

  beforeAll(async () => {
    engine = await LlamaEngine.create({ modelPath: await testModelPath(), contextSize: 512, sequences: 4 });
    t = await startTestServer(engine);
    for (let i = 0; i < 4; i++) {
      const ws = new ResponsesWS(t.client);
      sockets.push({ ws, log: new EventLog(ws) });
    }
  });
  afterAll(async () => {
    for (const { ws } of sockets) ws.close();
    await t?.server.close();
    await engine?.dispose();
  });

  /** One response on each socket, sent together; resolves once all have ended. */
  const round = (label: string) =>
    Promise.all(
      sockets.map(({ ws, log }, i) => {
        const from = log.events.length;
        ws.send({
          type: "response.create",
          model: "",
          input: `${label} ${i}: write a function that merges two sorted arrays.`,
          max_output_tokens: 4,
          temperature: 0,
          store: false,
        });
        return log.end(from);
      }),
    );

  // Each sequence holds its last reply, so each request first erases it, under the context's lock;
  // messages from several sockets are handled over several turns of the event loop. Without the
  // batch waiting for them, the first prompt went alone, and the others missed the next batch too
  // (the 1.5B shape: four prompt batches for eight streams, one when they wait).
  test("four streams' prompts go in one batch, in sequence order", async () => {
    await round("First");
    const batches = recordBatches(engine);
    // Each erase takes a few turns of the event loop, as they do behind a batch in flight on a
    // larger model (here a batch is over in a millisecond); each later one a turn less, so the
    // prompts are queued in the reverse of their sequences' order.
    const erase = LlamaContextSequence.prototype.eraseContextTokenRanges;
    let erased = 0;
    vi.spyOn(LlamaContextSequence.prototype, "eraseContextTokenRanges").mockImplementation(async function (
      this: LlamaContextSequence,
      ...args: Parameters<typeof erase>
    ) {
      const hops = 6 - erased++;
      for (let i = 0; i < hops; i++) await new Promise((resolve) => setImmediate(resolve));
      return erase.apply(this, args);
    });
    let ends: Awaited<ReturnType<typeof round>>;
    try {
      ends = await round("Second");
    } finally {
      vi.restoreAllMocks();
    }
    for (const end of ends) expect(end.type).not.toBe("response.failed");
    const first = batches[0]!.seqs;
    expect(new Set(first).size).toBe(4);
    expect(first).toEqual([...first].sort((a, b) => a - b));
  });

  // The claims that prompts hold end one by one as their shared batch returns: each generation
  // but the last went to node-llama-cpp's batched path for its first step, and the last, finding
  // no claim left, waited for that step and then took one of its own in the native loop (a pass
  // more per round: 116 ms of 5.2 s for four streams on the 1.5B shape).
  test("streams whose prompts shared a batch take their first step together", async () => {
    const batches = recordBatches(engine);
    const ends = await round("Together");
    for (const end of ends) expect(end.type).not.toBe("response.failed");
    const prompts = batches.findIndex((batch) => new Set(batch.seqs).size === 4);
    expect(prompts).toBeGreaterThanOrEqual(0);
    expect(new Set(batches[prompts + 1]?.seqs).size).toBe(4);
  });

  // A dead peer: one client sends and goes away while its request is on its way (its erase held
  // back), beside three that stay. Its request is cancelled and says it arrived, so the others'
  // batch goes and all three answer; the sequences stay usable for the next round.
  test("a client that disconnects on the way holds nobody back", async () => {
    const [gone, ...staying] = sockets.splice(0, 4) as [(typeof sockets)[number], ...typeof sockets];
    const erase = LlamaContextSequence.prototype.eraseContextTokenRanges;
    vi.spyOn(LlamaContextSequence.prototype, "eraseContextTokenRanges").mockImplementation(async function (
      this: LlamaContextSequence,
      ...args: Parameters<typeof erase>
    ) {
      for (let i = 0; i < 4; i++) await new Promise((resolve) => setImmediate(resolve));
      return erase.apply(this, args);
    });
    try {
      gone.ws.send({
        type: "response.create",
        model: "",
        input: "Gone: write a function that merges two sorted arrays.",
        max_output_tokens: 4,
        temperature: 0,
        store: false,
      });
      gone.ws.close();
      sockets.push(...staying);
      const ends = await round("Third");
      for (const end of ends) expect(end.type).not.toBe("response.failed");
    } finally {
      vi.restoreAllMocks();
    }
    const again = await round("Fourth");
    for (const end of again) expect(end.type).not.toBe("response.failed");
    // Every request that set out has said it arrived, the cancelled one too.
    expect((engine as unknown as { arrivals: BatchArrivals }).arrivals.onTheWay).toBe(0);
  });
});
