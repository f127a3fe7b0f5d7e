import type { EngineEvent, GenerateResult, StopReason } from "../../engine.js";

/** How a generation ended, with `performance.now()` times. */
export interface Finish {
  stopReason: StopReason;
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens?: number;
  predictions?: { accepted: number; rejected: number };
  started: number;
  prefilled: number;
  firstTokenAt?: number;
  lastTokenAt?: number;
}

/** The `done` event that ends every generation: stop reason, usage and timing. */
export function done(finish: Finish): EngineEvent {
  const { started, prefilled, firstTokenAt = 0, lastTokenAt = 0 } = finish;
  const result: GenerateResult = {
    stopReason: finish.stopReason,
    usage: {
      inputTokens: finish.inputTokens,
      cachedInputTokens: finish.cachedInputTokens,
      outputTokens: finish.outputTokens ?? 0,
      acceptedPredictionTokens: finish.predictions?.accepted ?? 0,
      rejectedPredictionTokens: finish.predictions?.rejected ?? 0,
    },
    timing: {
      promptMs: prefilled - started,
      firstTokenMs: (firstTokenAt || prefilled) - started,
      decodeMs: firstTokenAt ? lastTokenAt - firstTokenAt : 0,
    },
  };
  return { type: "done", result };
}
