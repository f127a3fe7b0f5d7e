import OpenAI from "openai";
import { ResponsesWS } from "openai/resources/responses/ws";
import { describe, expect, test } from "vitest";
import type {
  DraftRequest,
  DraftResult,
  Engine,
  EngineEvent,
  GenerateOptions,
  GenerateRequest,
} from "../engine/engine.js";
import { ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import { startTestServer } from "./test-support/test-server.js";
import { EventLog, isEnd } from "./test-support/ws-events.js";

/**
 * The llama engine reports a reply's end (its `done` event) and then still cleans up (the native
 * loop's last step, the sequence handed back) before its stream ends; the response ends only then.
 * This engine holds that window open until the test lets it close, so a steer or cancel can be
 * sent exactly inside it.
 */
class CleanupWindowEngine implements Engine {
  readonly info;
  /** Resolves once a reply's end was reported and the engine is cleaning up. */
  cleaning: Promise<void>;
  private enterCleanup!: () => void;
  private finishCleanup!: () => void;
  private readonly cleanupDone: Promise<void>;

  constructor(private readonly inner: ScriptedEngine) {
    this.info = inner.info;
    this.cleaning = new Promise((resolve) => {
      this.enterCleanup = resolve;
    });
    this.cleanupDone = new Promise((resolve) => {
      this.finishCleanup = resolve;
    });
  }

  /** Ends the cleanup of the reply in progress; later replies clean up at once. */
  finish(): void {
    this.finishCleanup();
  }

  async *generate(request: GenerateRequest, options?: GenerateOptions): AsyncGenerator<EngineEvent> {
    try {
      yield* this.inner.generate(request, options);
    } finally {
      this.enterCleanup();
      await this.cleanupDone;
    }
  }

  draft(request: DraftRequest): Promise<DraftResult> {
    return this.inner.draft(request);
  }

  async dispose(): Promise<void> {}

  async [Symbol.asyncDispose](): Promise<void> {}
}

/**
 * Writes "The end." and holds the reply there until {@link release}; then ends it, as cancelled
 * when aborted meanwhile and `honoursAbort`, else by itself ("stop": the abort came at the token
 * the model ended on). Later replies say "Woof." at once.
 */
class HeldReplyEngine implements Engine {
  readonly info = new ScriptedEngine().info;
  private replies = 0;
  private readonly held: Promise<void>;
  release!: () => void;

  constructor(private readonly honoursAbort: boolean) {
    this.held = new Promise((resolve) => {
      this.release = resolve;
    });
  }

  async *generate(_request: GenerateRequest, options?: GenerateOptions): AsyncGenerator<EngineEvent> {
    const first = this.replies++ === 0;
    yield { type: "text", text: first ? "The end." : "Woof." };
    if (first) await this.held;
    const cancelled = this.honoursAbort && options?.signal?.aborted === true;
    const usage = {
      inputTokens: 3,
      cachedInputTokens: 0,
      outputTokens: 2,
      acceptedPredictionTokens: 0,
      rejectedPredictionTokens: 0,
    };
    const timing = { promptMs: 1, firstTokenMs: 1, decodeMs: 1 };
    yield { type: "done", result: { stopReason: cancelled ? "cancelled" : "stop", usage, timing } };
  }

  async draft(): Promise<DraftResult> {
    return { outcome: "busy", prefixTokens: 0, evaluatedTokens: 0 };
  }

  async dispose(): Promise<void> {}

  async [Symbol.asyncDispose](): Promise<void> {}
}

async function setUp(engine: Engine) {
  const t = await startTestServer(engine);
  const client = new OpenAI({ baseURL: `${t.url}/v1`, apiKey: "unused", maxRetries: 0 });
  const ws = new ResponsesWS(client);
  const log = new EventLog(ws);
  return { t, ws, log };
}

describe("a steer that lands as the reply ends", () => {
  test("a steer sent after the engine reported the reply's end is refused, and the response completes with no successor", async () => {
    const engine = new CleanupWindowEngine(new ScriptedEngine({ script: [{ text: "The end." }] }));
    const { t, ws, log } = await setUp(engine);
    await using _ = t;
    const created = log.next((e) => e.type === "response.created");
    ws.send({ type: "response.create", model: "scripted", input: "Tell a story" } as never);
    const id = ((await created).response as { id: string }).id;
    await engine.cleaning;

    const answered = log.next((e) => e.type.startsWith("response.steer."));
    ws.send({ type: "response.steer", previous_response_id: id, input: "Now a dog." } as never);
    const answer = await answered;
    engine.finish();
    const end = await log.next(isEnd);

    expect(answer).toMatchObject({
      type: "response.steer.failed",
      error: { code: "response_already_completed" },
    });
    expect(end).toMatchObject({ type: "response.completed", response: { id } });
    // A round trip: anything the server sent for the steer has arrived by its answer.
    const pinged = log.next((e) => e.type === "response.steer.failed" && e !== answer);
    ws.send({ type: "response.steer", previous_response_id: id, input: "ping" } as never);
    await pinged;
    expect(log.events.filter((e) => e.type === "response.created")).toHaveLength(1);
    ws.close();
  });

  test("a steer accepted as the engine stops by itself still ends the response steered, and its successor runs", async () => {
    const engine = new HeldReplyEngine(false);
    const { t, ws, log } = await setUp(engine);
    await using _ = t;
    const created = log.next((e) => e.type === "response.created");
    ws.send({ type: "response.create", model: "scripted", input: "Tell a story" } as never);
    const id = ((await created).response as { id: string }).id;
    // From the first event on: the delta may have come in one read with response.created.
    await log.type("response.output_text.delta", 0);
    const answered = log.next((e) => e.type.startsWith("response.steer."));
    ws.send({ type: "response.steer", previous_response_id: id, input: "Now a dog." } as never);
    expect(await answered).toMatchObject({ type: "response.steer.accepted" });
    engine.release();

    const end = await log.next((e) => isEnd(e) && (e.response as { id: string }).id === id);
    expect(end).toMatchObject({
      type: "response.incomplete",
      response: { incomplete_details: { reason: "steered" } },
    });
    const successor = await log.type("response.completed", log.events.indexOf(end));
    expect(successor).toMatchObject({
      response: { previous_response_id: id, output: [{ content: [{ text: "Woof." }] }] },
    });
    ws.close();
  });

  test("a cancel after an accepted steer fails the steer once and ends the response cancelled", async () => {
    const engine = new HeldReplyEngine(true);
    const { t, ws, log } = await setUp(engine);
    await using _ = t;
    const created = log.next((e) => e.type === "response.created");
    ws.send({ type: "response.create", model: "scripted", input: "Tell a story" } as never);
    const id = ((await created).response as { id: string }).id;
    // From the first event on: the delta may have come in one read with response.created.
    await log.type("response.output_text.delta", 0);
    const accepted = log.next((e) => e.type === "response.steer.accepted");
    ws.send({ type: "response.steer", previous_response_id: id, input: "Now a dog." } as never);
    await accepted;
    const failing = log.next((e) => e.type === "response.steer.failed");
    ws.send({ type: "response.cancel", response_id: id } as never);
    const failed = await failing;
    expect(failed).toMatchObject({ error: { code: "response_not_active" } });
    engine.release();

    const end = await log.next(isEnd);
    expect(end).toMatchObject({
      type: "response.incomplete",
      response: { id, incomplete_details: { reason: "cancelled" } },
    });
    const pinged = log.next((e) => e.type === "response.steer.failed" && e !== failed);
    ws.send({ type: "response.steer", previous_response_id: id, input: "ping" } as never);
    await pinged;
    expect(log.events.filter((e) => e.type === "response.created")).toHaveLength(1);
    ws.close();
  });
});
