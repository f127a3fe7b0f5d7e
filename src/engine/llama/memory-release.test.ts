import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import { LlamaContext } from "node-llama-cpp";
import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from "vitest";
import { writeSyntheticModel } from "../synthetic/synthetic-model.js";
import { collect } from "../test-support/engine-conformance.js";
import { residentAnon } from "../test-support/resident-memory.js";
import { IdleMemoryRelease } from "./internal/memory-release.js";
import { LlamaEngine } from "./llama-engine.js";

/** Small layers under Qwen2.5's vocabulary: loading it is mostly the tokenizer. */
const SHAPE = {
  layers: 2,
  embedding: 64,
  heads: 4,
  kvHeads: 2,
  ffn: 128,
  vocab: 151936,
  contextLength: 4096,
};
const MiB = 1024 * 1024;

/** glibc's step of a release (the patched addon's malloc_trim, through node-llama-cpp's context). */
const trim = () =>
  vi.spyOn(
    LlamaContext.prototype as unknown as { _sparkReleaseFreeMemory(): void },
    "_sparkReleaseFreeMemory",
  );

describe("the engine keeps no memory it is done with", () => {
  let dir: string;
  let modelPath: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "spark-native-memory-"));
    modelPath = path.join(dir, "large-vocabulary.gguf");
    await writeSyntheticModel(modelPath, { shape: SHAPE, quant: "Q8_0" });
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  afterEach(() => {
    vi.restoreAllMocks();
  });

  test("the tokenizer's texts are dropped from the JavaScript heap; the token count and the tokenizer stay", async () => {
    await using engine = await LlamaEngine.create({ modelPath, threads: 1 });
    const ggml = engine.model.fileInfo.metadata.tokenizer!.ggml;
    expect(ggml.tokens).toHaveLength(SHAPE.vocab);
    expect(ggml.tokens.some((text) => typeof text === "string")).toBe(false);
    expect(ggml.merges).toBeUndefined();
    expect([...engine.model.iterateAllTokens()]).toHaveLength(SHAPE.vocab);
    const tokens = engine.model.tokenize("function parse(line) { return line; }");
    expect(engine.model.detokenize(tokens)).toBe("function parse(line) { return line; }");
  });

  test("memory is given back once no sequence is in use, not while one still is", async () => {
    await using engine = await LlamaEngine.create({
      modelPath,
      threads: 1,
      sequences: 2,
      releaseMemoryAfterIdleMs: 0,
    });
    const idle = vi.spyOn(IdleMemoryRelease.prototype, "idle");
    const trimmed = trim();
    const request = (content: string) => ({
      messages: [{ role: "user" as const, content }],
      maxOutputTokens: 8,
      temperature: 0,
      conversation: content,
    });
    // The second generation holds its sequence while it is suspended at its first event.
    const second = engine.generate(request("second"));
    await second.next();
    await collect(engine, request("first"));
    expect(idle).not.toHaveBeenCalled();
    const released = engine.memoryReleased();
    for await (const _ of second);
    expect(idle).toHaveBeenCalledTimes(1);
    await released;
    expect(trimmed).toHaveBeenCalledTimes(1);
  });

  test.runIf(process.platform === "linux")(
    "loading a large vocabulary leaves memory unused, and going idle after the first answer gives it back",
    async (context) => {
      await using engine = await LlamaEngine.create({ modelPath, threads: 1, releaseMemoryAfterIdleMs: 0 });
      if (engine.binary.build !== "local") context.skip("the prebuilt binary has no malloc_trim");
      const loaded = residentAnon();
      const released = engine.memoryReleased();
      await collect(engine, {
        messages: [{ role: "user", content: "Say something." }],
        maxOutputTokens: 8,
        temperature: 0,
      });
      await released;
      expect(loaded - residentAnon()).toBeGreaterThan(16 * MiB);
    },
  );
});

describe("IdleMemoryRelease", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  test("runs once the engine has been idle for the delay; work in between puts it off", () => {
    vi.useFakeTimers();
    const release = vi.fn();
    using idle = new IdleMemoryRelease(release, 2000);
    idle.idle();
    vi.advanceTimersByTime(1999);
    idle.busy();
    vi.advanceTimersByTime(5000);
    expect(release).not.toHaveBeenCalled();
    idle.idle();
    idle.idle();
    vi.advanceTimersByTime(2000);
    expect(release).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(10_000);
    expect(release).toHaveBeenCalledTimes(1);
  });

  test("any order of requests starting, ending and time passing: a release runs exactly when the engine has been idle for the delay since it last went idle", () => {
    const step = fc.oneof(
      fc.constant({ kind: "busy" as const }),
      fc.constant({ kind: "idle" as const }),
      fc.record({ kind: fc.constant("wait" as const), ms: fc.integer({ min: 0, max: 3000 }) }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        vi.useFakeTimers();
        try {
          const release = vi.fn();
          using idle = new IdleMemoryRelease(release, 2000);
          // The model: when the pending release is due (ms from now), or none is pending.
          let due: number | undefined;
          let expected = 0;
          for (const s of steps) {
            if (s.kind === "busy") due = undefined;
            else if (s.kind === "idle") due = 2000;
            else {
              if (due !== undefined && s.ms >= due) {
                expected++;
                due = undefined;
              } else if (due !== undefined) due -= s.ms;
            }
            if (s.kind === "busy") idle.busy();
            else if (s.kind === "idle") idle.idle();
            else vi.advanceTimersByTime(s.ms);
            expect(release).toHaveBeenCalledTimes(expected);
          }
        } finally {
          vi.useRealTimers();
        }
      }),
      { numRuns: 300 },
    );
  });

  test("a pending release is dropped with the engine, and next() resolves after a release", async () => {
    vi.useFakeTimers();
    const release = vi.fn();
    const idle = new IdleMemoryRelease(release, 100);
    idle.idle();
    idle[Symbol.dispose]();
    vi.advanceTimersByTime(1000);
    expect(release).not.toHaveBeenCalled();
    const next = idle.next();
    idle.idle();
    vi.advanceTimersByTime(100);
    await next;
    expect(release).toHaveBeenCalledTimes(1);
  });
});
