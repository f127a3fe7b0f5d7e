import { beforeAll, describe, expect, test } from "vitest";
import type { ChatMessage } from "../../protocol/chat.js";
import type { GenerateRequest } from "../engine.js";
import { collect } from "../test-support/engine-conformance.js";
import { testModelPath } from "../test-support/test-model.js";
import { renderPrompt } from "./internal/chat-rendering.js";
import { LlamaEngine, type LlamaEngineOptions } from "./llama-engine.js";

// A conversation and a fork of it from its first turn: the fork shares everything up to the new
// question, written out so that the two prompts render to the same tokens up to there.
const history: ChatMessage[] = [
  {
    role: "system",
    content: `You are Spark, a coding assistant. ${"Answer briefly and exactly. ".repeat(10)}`,
  },
  { role: "user", content: "Write a function that adds two numbers." },
  { role: "assistant", content: "function add(a, b) { return a + b; }" },
];
const parent: GenerateRequest = {
  messages: [...history, { role: "user", content: "Now make it subtract." }],
  maxOutputTokens: 12,
  conversation: "parent",
};
const fork: GenerateRequest = {
  messages: [...history, { role: "user", content: "Add types to it instead." }],
  maxOutputTokens: 12,
  conversation: "fork",
};

function sharedTokens(engine: LlamaEngine, a: GenerateRequest, b: GenerateRequest): number {
  const x = renderPrompt(engine.model, engine.chatWrapper, a.messages, undefined).tokens;
  const y = renderPrompt(engine.model, engine.chatWrapper, b.messages, undefined).tokens;
  let shared = 0;
  while (shared < x.length && x[shared] === y[shared]) shared++;
  return shared;
}

async function withEngine<T>(
  sequences: number,
  body: (engine: LlamaEngine) => Promise<T>,
  options: Partial<LlamaEngineOptions> = {},
): Promise<T> {
  await using engine = await LlamaEngine.create({
    modelPath: await testModelPath(),
    contextSize: 1024,
    sequences,
    ...options,
  });
  return await body(engine);
}

describe("a new conversation copies another conversation's prefix (llama engine)", () => {
  let fresh: string;
  beforeAll(async () => {
    // What evaluating the fork's whole prompt gives, on an engine that has nothing cached.
    fresh = await withEngine(2, async (engine) => {
      const answer = await collect(engine, fork);
      expect(answer.result.usage.cachedInputTokens).toBe(0);
      return answer.text;
    });
  });

  test("with two sequences the fork's prefix is copied and the parent keeps its own cache", async () => {
    await withEngine(2, async (engine) => {
      const first = await collect(engine, parent);
      const copied = await collect(engine, fork);
      const shared = sharedTokens(engine, parent, fork);
      expect(shared).toBeGreaterThan(40);
      expect(copied.result.usage.cachedInputTokens).toBe(shared);
      expect(copied.text).toBe(fresh);

      // The parent's next turn finds its whole previous prompt still cached on its own sequence.
      const next = await collect(engine, {
        ...parent,
        messages: [
          ...parent.messages,
          { role: "assistant", content: first.text },
          { role: "user", content: "Thanks." },
        ],
      });
      expect(next.result.usage.cachedInputTokens).toBeGreaterThanOrEqual(first.result.usage.inputTokens);
      // And the fork continues on the sequence it copied into.
      const again = await collect(engine, {
        ...fork,
        messages: [
          ...fork.messages,
          { role: "assistant", content: copied.text },
          { role: "user", content: "Thanks." },
        ],
      });
      expect(again.result.usage.cachedInputTokens).toBeGreaterThanOrEqual(copied.result.usage.inputTokens);
    });
  });

  test("with a draft model the copy answers as a fresh evaluation with the draft model does", async () => {
    const drafting = { draftModelPath: await testModelPath(), draftMinConfidence: 0, draftTokens: 4 };
    // A random model's near-ties can flip when drafts are verified in a batch: the fresh evaluation
    // drafts too.
    const freshWithDraft = await withEngine(
      2,
      async (engine) => (await collect(engine, fork)).text,
      drafting,
    );
    await withEngine(
      2,
      async (engine) => {
        await collect(engine, parent);
        const copied = await collect(engine, fork);
        expect(copied.result.usage.cachedInputTokens).toBe(sharedTokens(engine, parent, fork));
        expect(copied.text).toBe(freshWithDraft);
      },
      drafting,
    );
  });

  test("with one sequence the fork takes the sequence over: same answer, the parent evaluates again", async () => {
    await withEngine(1, async (engine) => {
      const first = await collect(engine, parent);
      const taken = await collect(engine, fork);
      expect(taken.result.usage.cachedInputTokens).toBe(sharedTokens(engine, parent, fork));
      expect(taken.text).toBe(fresh);
      const next = await collect(engine, {
        ...parent,
        messages: [
          ...parent.messages,
          { role: "assistant", content: first.text },
          { role: "user", content: "Thanks." },
        ],
      });
      expect(next.result.usage.cachedInputTokens).toBeLessThan(first.result.usage.inputTokens);
    });
  });
});
