import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { DraftAnswer } from "../client/draft-body.js";
import { ResponsesClient } from "../client/responses-client.js";
import { LlamaEngine } from "../engine/llama/llama-engine.js";
import { testModelPath } from "../engine/test-support/test-model.js";
import { startTestServer, type TestServer } from "./test-support/test-server.js";

const INSTRUCTIONS = "You are Spark, a coding assistant. Make minimal edits.";
const FOLLOW_UP =
  "Now add a test for the empty input case, and make the error message name the file it read.";

interface Turns {
  texts: string[];
  cached: number;
  answers: DraftAnswer[];
}

describe("type-ahead on the llama engine (synthetic model)", () => {
  let engine: LlamaEngine;
  let t: TestServer;
  let client: ResponsesClient;
  beforeAll(async () => {
    // One sequence: every conversation starts from whatever the last one left.
    engine = await LlamaEngine.create({ modelPath: await testModelPath(), contextSize: 4096, sequences: 1 });
    t = await startTestServer(engine);
    client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1` });
  });
  afterAll(async () => {
    await client.close();
    await t.server.close();
    await engine.dispose();
  });

  /** A first turn, the drafts typed while reading its answer, then the follow-up. */
  async function turns(opening: string, typed: string[]): Promise<Turns> {
    const settings = { model: "", instructions: INSTRUCTIONS, temperature: 0 };
    const first = await client.create({ ...settings, input: opening, max_output_tokens: 12 }).final;
    const answers: DraftAnswer[] = [];
    for (const draft of typed) {
      answers.push(
        await client.draft({ model: "", instructions: INSTRUCTIONS, previous_response_id: first.id, draft }),
      );
    }
    const second = await client.create({
      ...settings,
      previous_response_id: first.id,
      input: FOLLOW_UP,
      max_output_tokens: 24,
    }).final;
    const texts = [first, second].map((response) =>
      response.output
        .map((item) => (item.type === "message" ? item.content.map((part) => part.text).join("") : ""))
        .join(""),
    );
    return { texts, cached: second.usage?.input_tokens_details.cached_tokens ?? -1, answers };
  }

  test("a draft leaves greedy output unchanged and the follow-up finds the drafted text cached", async () => {
    const plain = await turns("Write a function that reads a file.", []);
    const drafted = await turns("Write a function that reads a file.", [FOLLOW_UP.slice(0, 60)]);
    expect(drafted.texts).toEqual(plain.texts);
    const [answer] = drafted.answers;
    expect(answer?.outcome).toBe("evaluated");
    expect(answer!.evaluatedTokens).toBeGreaterThan(0);
    // Everything the draft evaluated was reused, and that covers most of the typed words.
    expect(drafted.cached).toBeGreaterThanOrEqual(answer!.prefixTokens);
    expect(drafted.cached - plain.cached).toBeGreaterThanOrEqual(8);
  });

  test("a draft that diverges from what is sent (typed, then deleted) gives exactly the same output", async () => {
    const plain = await turns("Rename the variable x to y.", []);
    const diverged = await turns("Rename the variable x to y.", [
      "Now add a benchmark for the parser and print the median time of ten runs",
      "Now add a test for the",
    ]);
    expect(diverged.texts).toEqual(plain.texts);
    expect(diverged.answers.map((answer) => answer.outcome)).toEqual(["evaluated", "evaluated"]);
    // The second draft was trimmed back to where it diverged, and still helped.
    expect(diverged.cached).toBeGreaterThan(plain.cached);
  });
});
