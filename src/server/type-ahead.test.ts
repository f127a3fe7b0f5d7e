import { describe, expect, test } from "vitest";
import { ResponsesClient } from "../client/responses-client.js";
import type { DraftOptions, DraftRequest, DraftResult, GenerateRequest } from "../engine/engine.js";
import { ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import { MAX_DRAFT_TEXT } from "../protocol/responses-request.js";
import { startTestServer } from "./test-support/test-server.js";

const INSTRUCTIONS = "You are Spark.";
const TOOLS = [{ type: "function" as const, name: "read_file", parameters: { type: "object" } }];

/** A scripted engine that also keeps every request it was given. */
function recordingEngine(): { engine: ScriptedEngine; requests: GenerateRequest[] } {
  const requests: GenerateRequest[] = [];
  const engine = new ScriptedEngine({
    script: (request) => {
      // The conversation key is a random response id: the same conversation, named differently.
      requests.push({ ...structuredClone(request), conversation: "<conversation>" });
      return { text: `answer ${requests.length}` };
    },
  });
  return { engine, requests };
}

/** A scripted engine whose drafts run until aborted, so tests can act while one is in flight. */
class HeldDraftEngine extends ScriptedEngine {
  readonly started: DraftRequest[] = [];
  private onStart: (() => void)[] = [];

  override draft(request: DraftRequest, options: DraftOptions = {}): Promise<DraftResult> {
    this.started.push(request);
    for (const wake of this.onStart.splice(0)) wake();
    return new Promise((resolve) => {
      const stop = () => resolve({ outcome: "cancelled", prefixTokens: 9, evaluatedTokens: 3 });
      if (options.signal?.aborted) stop();
      options.signal?.addEventListener("abort", stop, { once: true });
    });
  }

  /** Resolves once `count` drafts have reached the engine. */
  async startedCount(count: number): Promise<void> {
    while (this.started.length < count) await new Promise<void>((resolve) => this.onStart.push(resolve));
  }
}

/** Runs a two-turn conversation; `typing` is called between the turns with the first response's id. */
async function conversation(
  client: ResponsesClient,
  typing: (previous: string) => Promise<void>,
): Promise<{ texts: string[]; cached: number }> {
  const settings = { model: "scripted", instructions: INSTRUCTIONS, tools: TOOLS };
  const first = await client.create({ ...settings, input: "Fix the parser" }).final;
  await typing(first.id);
  const second = await client.create({
    ...settings,
    previous_response_id: first.id,
    input: "Now add a test for the empty input case",
  }).final;
  const texts = [first, second].map((r) => JSON.stringify(r.output.map(({ id: _, ...item }) => item)));
  return { texts, cached: second.usage?.input_tokens_details.cached_tokens ?? -1 };
}

describe("type-ahead drafts (spark.draft) on the scripted engine", () => {
  test("drafts, including one typed then deleted, never change what the engine is given; they add cached tokens", async () => {
    const plain = recordingEngine();
    const drafted = recordingEngine();
    await using plainServer = await startTestServer(plain.engine);
    await using draftServer = await startTestServer(drafted.engine);
    await using plainClient = await ResponsesClient.connect({ baseUrl: `${plainServer.url}/v1` });
    await using draftClient = await ResponsesClient.connect({ baseUrl: `${draftServer.url}/v1` });

    const without = await conversation(plainClient, async () => {});
    const answers: string[] = [];
    const withDrafts = await conversation(draftClient, async (previous) => {
      const base = {
        model: "scripted",
        instructions: INSTRUCTIONS,
        tools: TOOLS,
        previous_response_id: previous,
      };
      for (const draft of [
        "Now add",
        "Now add a benchmark",
        "Now add a",
        "Now add a test for the empty in",
      ]) {
        answers.push((await draftClient.draft({ ...base, draft })).outcome);
      }
    });

    expect(answers).toEqual(["evaluated", "evaluated", "evaluated", "evaluated"]);
    expect(drafted.engine.drafts.at(-1)?.text).toBe("Now add a test for the empty in");
    expect(drafted.engine.drafts.at(-1)?.conversation).toBeDefined();
    expect(drafted.requests).toEqual(plain.requests);
    expect(withDrafts.texts).toEqual(without.texts);
    // The user turn's start and the draft's settled words ("Now add a test for the empty") were
    // already in the state.
    expect(withDrafts.cached).toBe(without.cached + 8);
  });

  test("a malformed or oversized draft is refused with invalid_event; an unknown previous_response_id is an error, and the connection goes on", async () => {
    const engine = new ScriptedEngine({ script: [{ text: "still here" }] });
    await using t = await startTestServer(engine);
    await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1` });

    const oversized = await client.draft({ model: "scripted", draft: "x".repeat(MAX_DRAFT_TEXT + 1) });
    expect(oversized).toMatchObject({ outcome: "failed", error: { code: "invalid_event" } });
    const malformed = await client.draft({ model: "scripted", draft: 42 as never });
    expect(malformed).toMatchObject({ outcome: "failed", error: { code: "invalid_event" } });
    const badTools = await client.draft({ model: "scripted", draft: "hi", tools: "all" as never });
    expect(badTools).toMatchObject({ outcome: "failed", error: { code: "invalid_event" } });
    const unknown = await client.draft({ model: "scripted", previous_response_id: "resp_nope", draft: "hi" });
    expect(unknown).toMatchObject({ outcome: "failed", error: { code: "previous_response_not_found" } });
    expect(engine.drafts).toEqual([]);

    const response = await client.create({ model: "scripted", input: "hello" }).final;
    expect(response.status).toBe("completed");
    expect(await client.draft({ model: "scripted", draft: "and then" })).toMatchObject({
      outcome: "evaluated",
    });
  });

  test("a newer draft supersedes the running one, and a response.create cancels the draft in flight", async () => {
    const engine = new HeldDraftEngine({ script: [{ text: "done" }] });
    await using t = await startTestServer(engine);
    await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1` });

    const first = client.draft({ model: "scripted", draft: "Refactor the" });
    await engine.startedCount(1);
    const second = client.draft({ model: "scripted", draft: "Refactor the lexer" });
    expect(await first).toMatchObject({ outcome: "superseded" });
    await engine.startedCount(2);
    expect(engine.started.map((draft) => draft.text)).toEqual(["Refactor the", "Refactor the lexer"]);

    const response = await client.create({ model: "scripted", input: "Refactor the lexer" }).final;
    expect(await second).toEqual({ outcome: "cancelled", prefixTokens: 9, evaluatedTokens: 3 });
    expect(response.status).toBe("completed");
  });

  test("a draft sent while a response streams on the connection is answered busy and never reaches the engine", async () => {
    const engine = new ScriptedEngine({ script: [{ text: "a b c d e f g h" }], tokensPerSecond: 50 });
    await using t = await startTestServer(engine);
    await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1` });
    const stream = client.create({ model: "scripted", input: "go" });
    await stream.started;
    expect(await client.draft({ model: "scripted", draft: "next question" })).toMatchObject({
      outcome: "busy",
    });
    expect((await stream.final).status).toBe("completed");
    expect(engine.drafts).toEqual([]);
  });

  test("over HTTP/SSE a draft is not sent", async () => {
    const engine = new ScriptedEngine();
    await using t = await startTestServer(engine);
    await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1`, webSocket: false });
    expect(await client.draft({ model: "scripted", draft: "hello there" })).toMatchObject({
      outcome: "not_sent",
    });
    expect(engine.drafts).toEqual([]);
  });
});
