import type { LlamaEngine } from "../../llama-engine.js";

/**
 * The sequence ids of each batch the engine's context decodes through node-llama-cpp, in the
 * batch's order (one entry per sequence's tokens in it). Steps of the native loop are not batches
 * here. White-box: wraps node-llama-cpp's private addon context.
 */
export function recordBatches(engine: LlamaEngine): { seqs: number[] }[] {
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
