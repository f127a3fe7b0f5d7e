import fc from "fast-check";
import { LlamaContextSequence } from "node-llama-cpp";
import { ResponsesWS } from "openai/resources/responses/ws";
import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from "vitest";
import { startTestServer, type TestServer } from "../../server/test-support/test-server.js";
import { EventLog } from "../../server/test-support/ws-events.js";
import { testModelPath } from "../test-support/test-model.js";
import { BatchArrivals } from "./internal/batch-arrivals.js";
import { LlamaEngine } from "./llama-engine.js";

const MAX_WAIT_MS = 50;

describe("a batch waits for the requests on their way to it", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  test("a dispatch waits while a request is on its way, and goes once it has arrived", () => {
    vi.useFakeTimers();
    const arrivals = new BatchArrivals();
    const dispatch = vi.fn();
    const arrived = arrivals.arrive();
    arrivals.schedule(dispatch);
    vi.advanceTimersByTime(10);
    expect(dispatch).not.toHaveBeenCalled();
    arrived();
    arrived();
    vi.advanceTimersByTime(0);
    expect(dispatch).toHaveBeenCalledTimes(1);
  });

  test("a request that never arrives holds a batch back at most 50 ms", () => {
    vi.useFakeTimers();
    const arrivals = new BatchArrivals();
    const dispatch = vi.fn();
    arrivals.arrive();
    arrivals.schedule(dispatch);
    vi.advanceTimersByTime(MAX_WAIT_MS - 1);
    expect(dispatch).not.toHaveBeenCalled();
    // The timer's dispatch goes at the next cycle (a millisecond later, in fake time).
    vi.advanceTimersByTime(2);
    expect(dispatch).toHaveBeenCalledTimes(1);
  });

  // Any order of requests setting out, arriving, batches asking to go and time passing: a batch
  // never goes while a request is on its way unless some batch has waited 50 ms, and none waits
  // longer than that, or at all once nobody is on the way.
  test("model: no batch goes early, none waits past its bound", () => {
    const step = fc.oneof(
      fc.constant({ kind: "arrive" as const }),
      fc.record({ kind: fc.constant("arrived" as const), which: fc.nat() }),
      fc.constant({ kind: "schedule" as const }),
      fc.record({ kind: fc.constant("tick" as const), ms: fc.integer({ min: 0, max: 30 }) }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        vi.useFakeTimers();
        try {
          const arrivals = new BatchArrivals();
          const onTheWay: (() => void)[] = [];
          const batches: { at: number; ranAt?: number; arrivingWhenRan?: number }[] = [];
          const now = () => Date.now();
          // A cycle of the event loop: a dispatch set off by a timer goes a millisecond later.
          const settle = () => vi.advanceTimersByTime(1);
          for (const s of steps) {
            if (s.kind === "arrive") onTheWay.push(arrivals.arrive());
            else if (s.kind === "arrived" && onTheWay.length > 0)
              onTheWay.splice(s.which % onTheWay.length, 1)[0]!();
            else if (s.kind === "schedule") {
              const batch: (typeof batches)[number] = { at: now() };
              batches.push(batch);
              arrivals.schedule(() => {
                batch.ranAt = now();
                batch.arrivingWhenRan = onTheWay.length;
              });
            } else if (s.kind === "tick") vi.advanceTimersByTime(s.ms);
            settle();
            const waiting = batches.filter((batch) => batch.ranAt === undefined);
            // None waits once nobody is on the way, nor past its bound.
            if (onTheWay.length === 0) expect(waiting).toEqual([]);
            for (const batch of waiting) expect(now() - batch.at).toBeLessThanOrEqual(MAX_WAIT_MS + 1);
          }
          for (const batch of batches) {
            if (batch.ranAt === undefined || batch.arrivingWhenRan === 0) continue;
            // Went while someone was on the way: the oldest batch waiting with it had waited 50 ms.
            const oldest = Math.min(...batches.filter((b) => b.ranAt === batch.ranAt).map((b) => b.at));
            expect(batch.ranAt - oldest).toBeGreaterThanOrEqual(MAX_WAIT_MS);
          }
        } finally {
          vi.useRealTimers();
        }
      }),
      { numRuns: 300 },
    );
  });
});

/** The sequence ids of each batch the context decodes through node-llama-cpp, in the batch's order. */
function recordBatches(engine: LlamaEngine): { seqs: number[] }[] {
  const context = (engine as unknown as { context: { _ctx: Record<string, unknown> } }).context;
  const addon = context._ctx;
  const batches: { seqs: number[] }[] = [];
  let current: number[] = [];
  context._ctx = new Proxy(addon, {
    get(target, key) {
      const value = target[key as string];
      if (typeof value !== "function") return value;
      if (key === "addToBatch")
        return (sequenceId: number, ...rest: unknown[]) => {
          current.push(sequenceId);
          return value.call(target, sequenceId, ...rest);
        };
      if (key === "decodeBatch")
        return (...args: unknown[]) => {
          batches.push({ seqs: current });
          current = [];
          return value.apply(target, args);
        };
      return value.bind(target);
    },
  });
  return batches;
}

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
});
