import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { alterSegments } from "../bench/internal/alter-segments.js";
import type { GenerateRequest } from "../engine/engine.js";
import { LlamaEngine } from "../engine/llama/llama-engine.js";
import { collect } from "../engine/test-support/engine-conformance.js";
import { smollm2Path } from "./test-support/smollm2.js";

const model = smollm2Path();

/** The file `spark bench --scenario spec` has SmolLM2 rewrite: short code lines. */
const file = Array.from({ length: 300 }, (_, i) =>
  i % 3 === 0 ? `const v${i} = load(${i});` : `total += v${i - (i % 3)} * ${i};`,
).join("\n");

/**
 * Predicted Outputs on a real edit: SmolLM2 rewrites a file, and the prediction is its own answer
 * with some lines changed; how much the native loop drafts follows how often the prediction is
 * right. The verification cost is fixed, so the draft lengths depend on acceptance only, not on
 * this machine's timings. (That the output is plain decoding's, token for token, is tested on the
 * trained stories260K in native-speculation.test.ts: on this CPU a Q4_1 model's logits in a batch
 * differ slightly from one token's alone, and SmolLM2's near-ties can flip.)
 */
describe.runIf(model)("Predicted Outputs on SmolLM2's edit", () => {
  let engine: LlamaEngine;
  const request: GenerateRequest = {
    messages: [
      {
        role: "user",
        content: `Rewrite this 300-line file with clearer names. Reply with the whole file only.\n\n${file}`,
      },
    ],
    maxOutputTokens: 600,
    temperature: 0,
  };
  let plain: string;

  beforeAll(async () => {
    engine = await LlamaEngine.create({
      modelPath: model!,
      contextSize: 4096,
      sequences: 1,
      draftTokenCost: 0.5,
    });
    plain = (await collect(engine, request)).text;
  });
  afterAll(async () => {
    await engine?.dispose();
  });

  test("a prediction wrong every other line costs few refuted drafts: a return to it after a changed line does not start optimistic again", async () => {
    const predicted = await collect(engine, { ...request, prediction: alterSegments(plain, 0.5) });
    const { outputTokens, rejectedPredictionTokens: rejected } = predicted.result.usage;
    // Each stretch after a changed line used to start at the optimistic prior and draft several
    // tokens that were refuted there, every time: 937 refuted for 48 accepted in a 600-token answer.
    expect(rejected).toBeLessThan(outputTokens / 10);
  });

  test("a prediction right all the way is drafted from: most of the answer comes from accepted drafts", async () => {
    const predicted = await collect(engine, { ...request, prediction: plain });
    const {
      outputTokens,
      acceptedPredictionTokens: accepted,
      rejectedPredictionTokens: rejected,
    } = predicted.result.usage;
    expect(accepted).toBeGreaterThan(outputTokens / 2);
    expect(rejected).toBeLessThan(accepted / 10);
  });
});
