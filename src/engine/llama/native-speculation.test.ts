import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { ChatMessage, ToolDefinition } from "../../protocol/chat.js";
import { smollm2Path } from "../../real-model/test-support/smollm2.js";
import type { GenerateRequest } from "../engine.js";
import { tinyModelWithTemplate } from "../test-support/chat-templates.js";
import { collect } from "../test-support/engine-conformance.js";
import { testModelPath, trainedTestModelPath } from "../test-support/test-model.js";
import { LlamaEngine } from "./llama-engine.js";

/**
 * `text` with `share` (0..1) of it kept and the rest replaced by other text of the same length,
 * in 40-character pieces spread evenly: a prediction that matches the output `share` of the way.
 */
function predictionMatching(text: string, share: number): string {
  const pieces = text.match(/[\s\S]{1,40}/gu) ?? [];
  const altered = Math.round(pieces.length * (1 - share));
  const chosen = new Set(
    Array.from({ length: altered }, (_, k) => Math.floor(((k + 0.5) * pieces.length) / altered)),
  );
  return pieces.map((piece, i) => (chosen.has(i) ? "#".repeat(piece.length) : piece)).join("");
}

/**
 * Drafts verified in the native loop (Predicted Outputs and prompt lookup) give exactly plain greedy
 * decoding's output, with the draft counts reported. Exactness is tested on the tiny synthetic model
 * and on a trained model: on a random-weight model, logits computed in a batch differ slightly from
 * one token's alone and near-ties can flip (docs/DESIGN-NOTES.md, item 11). With the prebuilt binary
 * there is no native loop and the same requests take the batched path; the outputs still hold.
 */
describe.each([
  {
    name: "tiny synthetic",
    path: () => testModelPath(),
    content: "Write a function that adds two numbers.",
    // A random-weight model often writes text in non-canonical tokens (and lone bytes), which a
    // text prediction cannot draft token for token, and repeats nothing of its conversation.
    trained: false,
  },
  {
    name: "trained stories260K",
    path: async () => trainedTestModelPath()!,
    content: "Once upon a time, there was a little girl",
    trained: true,
    skip: trainedTestModelPath() === undefined,
  },
])("speculation in the native loop: $name", ({ path, content, trained, skip }) => {
  let engine: LlamaEngine;
  const messages: ChatMessage[] = [{ role: "user", content }];
  const request: GenerateRequest = { messages, maxOutputTokens: 120 };
  let plain: Awaited<ReturnType<typeof collect>>;

  beforeAll(async () => {
    if (skip) return;
    // A fixed verification cost, so how far it drafts depends on acceptance only, not on this
    // machine's timings (a token more in a pass is measured as it decodes, by default).
    engine = await LlamaEngine.create({
      modelPath: await path(),
      contextSize: 1024,
      sequences: 2,
      draftTokenCost: 0.05,
    });
    plain = await collect(engine, request);
    expect(plain.result.usage.outputTokens).toBeGreaterThan(60);
  });
  afterAll(async () => {
    await engine?.dispose();
  });

  test.skipIf(skip).each([1, 0.9, 0.5, 0])(
    "a prediction matching %s of the output gives the plain output, drafted in the native loop",
    async (share) => {
      const runs = { ...engine.nativeRunCounts };
      const predicted = await collect(engine, {
        ...request,
        prediction: predictionMatching(plain.text, share),
      });
      expect(predicted.text).toBe(plain.text);
      expect(predicted.result.usage.outputTokens).toBe(plain.result.usage.outputTokens);
      expect(predicted.result.stopReason).toBe(plain.result.stopReason);
      if (engine.binary.nativeLoop) {
        expect(engine.nativeRunCounts.runs).toBe(runs.runs + 1);
        expect(engine.nativeRunCounts.withDrafts).toBe(runs.withDrafts + 1);
      }
      const { acceptedPredictionTokens: accepted, rejectedPredictionTokens: rejected } =
        predicted.result.usage;
      expect(accepted).toBeLessThanOrEqual(predicted.result.usage.outputTokens);
      if (share === 1)
        expect(accepted).toBeGreaterThan(trained ? predicted.result.usage.outputTokens * 0.8 : 0);
      if (share === 0) expect(accepted).toBe(0);
      if (share < 1) expect(rejected).toBeGreaterThan(0);
    },
  );

  test.skipIf(skip)("more of the prediction matching means more tokens accepted", async () => {
    const accepted = [];
    for (const share of [0.5, 0.9, 1]) {
      const predicted = await collect(engine, {
        ...request,
        prediction: predictionMatching(plain.text, share),
      });
      accepted.push(predicted.result.usage.acceptedPredictionTokens);
    }
    expect(accepted[0]).toBeLessThan(accepted[2]!);
    expect(accepted[1]).toBeLessThanOrEqual(accepted[2]!);
  });

  test.skipIf(skip)("prompt lookup gives the plain output, drafting in the native loop", async () => {
    // The model's own answer is in the conversation: prompt lookup finds it there.
    const conversation: ChatMessage[] = [
      ...messages,
      { role: "assistant", content: plain.text },
      { role: "user", content },
    ];
    const expected = await collect(engine, { messages: conversation, maxOutputTokens: 120 });
    const runs = { ...engine.nativeRunCounts };
    const looked = await collect(engine, {
      messages: conversation,
      maxOutputTokens: 120,
      promptLookup: true,
    });
    expect(looked.text).toBe(expected.text);
    expect(looked.result.usage.outputTokens).toBe(expected.result.usage.outputTokens);
    if (engine.binary.nativeLoop) expect(engine.nativeRunCounts.withDrafts).toBe(runs.withDrafts + 1);
    if (trained) expect(looked.result.usage.acceptedPredictionTokens).toBeGreaterThan(0);
  });

  test.skipIf(skip)(
    "a run with a prediction stopped midway leaves the sequence exact: the same request again gives the same output",
    async () => {
      const prediction = predictionMatching(plain.text, 0.9);
      const controller = new AbortController();
      let text = "";
      let stopReason: string | undefined;
      for await (const event of engine.generate(
        { ...request, prediction, conversation: "stopped" },
        { signal: controller.signal },
      )) {
        if (event.type === "text") {
          text += event.text;
          if (text.length > 20) controller.abort();
        }
        if (event.type === "done") stopReason = event.result.stopReason;
      }
      expect(stopReason).toBe("cancelled");
      expect(plain.text.startsWith(text)).toBe(true);
      // The same conversation's sequence, with the stopped run's tokens in its state.
      const again = await collect(engine, { ...request, prediction, conversation: "stopped" });
      expect(again.text).toBe(plain.text);
      expect(again.result.usage.cachedInputTokens).toBeGreaterThan(0);
    },
  );

  test.skipIf(skip)(
    "a request arriving during a run with a prediction: the run goes on batched, both outputs are plain decoding's",
    async () => {
      // Each on its own sequence, its prompt's state computed as for its expected output (a prompt
      // evaluated in other batches can change a random model's near-ties).
      const other: GenerateRequest = {
        messages: [{ role: "user", content: "Tell me more." }],
        maxOutputTokens: 12,
        conversation: "other",
      };
      const expectedOther = await collect(engine, other);
      const busy: GenerateRequest = { ...request, conversation: "busy" };
      const expected = await collect(engine, busy);
      const prediction = predictionMatching(expected.text, 0.9);
      let text = "";
      let otherRun: ReturnType<typeof collect> | undefined;
      let usage: { acceptedPredictionTokens: number; outputTokens: number } | undefined;
      for await (const event of engine.generate({ ...busy, prediction })) {
        if (event.type === "text") {
          text += event.text;
          if (text.length > 20) otherRun ??= collect(engine, other);
        }
        if (event.type === "done") usage = event.result.usage;
      }
      expect(otherRun).toBeDefined();
      expect(text).toBe(expected.text);
      expect((await otherRun!).text).toBe(expectedOther.text);
      // Drafts verified in both loops are counted.
      expect(usage!.acceptedPredictionTokens).toBeGreaterThan(0);
      expect(usage!.acceptedPredictionTokens).toBeLessThanOrEqual(usage!.outputTokens);
    },
  );
});

describe("what a draft token costs decides how far the native loop drafts", () => {
  const messages: ChatMessage[] = [{ role: "user", content: "Write a function that adds two numbers." }];
  const engines: LlamaEngine[] = [];
  const create = async (draftTokenCost?: number) => {
    const engine = await LlamaEngine.create({
      modelPath: await testModelPath(),
      contextSize: 1024,
      draftTokenCost,
    });
    engines.push(engine);
    return engine;
  };
  afterAll(async () => {
    for (const engine of engines) await engine.dispose();
  });

  test("a draft token that costs a whole decode step is never drafted; a cheap one is", async () => {
    const dear = await create(1);
    const plain = await collect(dear, { messages, maxOutputTokens: 80 });
    const predicted = await collect(dear, { messages, maxOutputTokens: 80, prediction: plain.text });
    expect(predicted.text).toBe(plain.text);
    if (dear.binary.nativeLoop) {
      expect(predicted.result.usage.acceptedPredictionTokens).toBe(0);
      expect(predicted.result.usage.rejectedPredictionTokens).toBe(0);
    }
    const cheap = await create(0.01);
    const drafted = await collect(cheap, { messages, maxOutputTokens: 80, prediction: plain.text });
    expect(drafted.text).toBe(plain.text);
    expect(drafted.result.usage.acceptedPredictionTokens).toBeGreaterThan(0);
  });

  test("measured as it decodes by default: the output is plain decoding's all the same", async () => {
    const engine = await create();
    const plain = await collect(engine, { messages, maxOutputTokens: 80 });
    for (let i = 0; i < 3; i++) {
      const predicted = await collect(engine, { messages, maxOutputTokens: 80, prediction: plain.text });
      expect(predicted.text).toBe(plain.text);
      const { acceptedPredictionTokens: accepted, outputTokens } = predicted.result.usage;
      expect(accepted).toBeLessThanOrEqual(outputTokens);
    }
  });

  test("a cost that is not a share of a step is refused", async () => {
    for (const draftTokenCost of [0, -1, 1.5, Number.NaN]) {
      await expect(
        LlamaEngine.create({ modelPath: await testModelPath(), contextSize: 1024, draftTokenCost }),
      ).rejects.toMatchObject({ code: "invalid_request" });
    }
  });
});

describe("speculation in the native loop around a tool call's grammar", () => {
  const tools: ToolDefinition[] = [
    {
      name: "pick",
      description: "Pick a mode.",
      parameters: {
        type: "object",
        properties: { mode: { type: "string", enum: ["fast", "slow"] } },
        required: ["mode"],
      },
    },
  ];
  let native: LlamaEngine;
  let batched: LlamaEngine;
  beforeAll(async () => {
    const modelPath = await tinyModelWithTemplate("Qwen-Qwen2.5-7B-Instruct.jinja");
    native = await LlamaEngine.create({ modelPath, contextSize: 2048, draftTokenCost: 0.05 });
    batched = await LlamaEngine.create({ modelPath, contextSize: 2048, nativeLoop: false });
  });
  afterAll(async () => {
    await native?.dispose();
    await batched?.dispose();
  });

  test("a forced call under its grammar, with prompt lookup on: the batched path's events", async () => {
    const request: GenerateRequest = {
      messages: [{ role: "user", content: "Pick one, then say why." }],
      tools,
      toolChoice: "required",
      promptLookup: true,
      maxOutputTokens: 160,
    };
    const expected = await collect(batched, request);
    const actual = await collect(native, request);
    const shape = (events: typeof actual.events) =>
      events.flatMap((event) =>
        event.type === "text" || event.type === "tool_call" ? [event] : event.type === "done" ? [] : [],
      );
    expect(shape(actual.events)).toEqual(
      shape(expected.events).map((event) =>
        event.type === "tool_call"
          ? { ...event, call: { ...event.call, callId: expect.any(String) } }
          : event,
      ),
    );
    expect(actual.result.usage.outputTokens).toBe(expected.result.usage.outputTokens);
  });
});

/** Events a face sees: text and calls (call ids are random). */
function shown(
  events: Awaited<ReturnType<typeof collect>>["events"],
): (string | { call: string; arguments: string })[] {
  return events.flatMap((event): (string | { call: string; arguments: string })[] =>
    event.type === "text"
      ? [event.text]
      : event.type === "tool_call"
        ? [{ call: event.call.name, arguments: event.call.arguments }]
        : [],
  );
}

// A trained chat model that writes a call when asked to repeat one: the grammar then switches on
// where its trigger appears (SmolLM2 is fetched by `npm run fetch:smollm2`; skipped without it).
describe.skipIf(!smollm2Path())(
  "speculation in the native loop around a call's lazy grammar (SmolLM2)",
  () => {
    const tools: ToolDefinition[] = [
      {
        name: "list_dir",
        description: "Lists a directory.",
        parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
      },
    ];
    let native: LlamaEngine;
    let batched: LlamaEngine;
    beforeAll(async () => {
      const modelPath = smollm2Path()!;
      // One thread: with two, a KV cell computed in a batch rather than alone can tip one of this
      // quantized model's near-ties later on (docs/DESIGN-NOTES.md, item 11), and the two paths
      // verify drafts in different batches.
      const options = { modelPath, contextSize: 2048, threads: 1 };
      native = await LlamaEngine.create({ ...options, draftTokenCost: 0.05 });
      batched = await LlamaEngine.create({ ...options, nativeLoop: false });
    });
    afterAll(async () => {
      await native?.dispose();
      await batched?.dispose();
    });

    test("native decoding with prompt lookup stops where a call starts, the grammar writes it, native decoding resumes: the batched path's events", async () => {
      const request: GenerateRequest = {
        messages: [
          {
            role: "user",
            content:
              'Repeat this exactly, nothing else: <tool_call>\n{"name": "list_dir", "arguments": {"path": "src"}}\n</tool_call>',
          },
        ],
        tools,
        promptLookup: true,
        maxOutputTokens: 120,
      };
      const expected = await collect(batched, request);
      const runs = { ...native.nativeRunCounts };
      const actual = await collect(native, request);
      expect(shown(expected.events)).toContainEqual({ call: "list_dir", arguments: '{"path": "src"}' });
      expect(shown(actual.events)).toEqual(shown(expected.events));
      expect(actual.result.usage.outputTokens).toBe(expected.result.usage.outputTokens);
      // Drafting natively before the call and again after it.
      if (native.binary.nativeLoop)
        expect(native.nativeRunCounts.withDrafts).toBeGreaterThanOrEqual(runs.withDrafts + 2);
    });
  },
);
