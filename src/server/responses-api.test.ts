import { ResponsesWS } from "openai/resources/responses/ws";
import { describe, expect, test } from "vitest";
import { ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import { startTestServer } from "./test-support/test-server.js";
import { EventLog } from "./test-support/ws-events.js";

describe("Responses API over HTTP with the official SDK", () => {
  test("responses.create returns the scripted text with usage and timing", async () => {
    await using t = await startTestServer(new ScriptedEngine({ script: [{ text: "Hello from Spark" }] }));
    const response = await t.client.responses.create({
      model: "scripted",
      input: "hi",
      instructions: "Be brief.",
    });
    expect(response.status).toBe("completed");
    expect(response.output_text).toBe("Hello from Spark");
    expect(response.usage?.output_tokens).toBe(3);
    expect(response.usage?.input_tokens).toBeGreaterThan(0);
    expect(response.usage?.input_tokens_details.cached_tokens).toBe(0);
    const timing = (response as unknown as { timing: Record<string, number> }).timing;
    expect(timing.time_to_first_token_ms).toBeGreaterThanOrEqual(0);
    expect(timing.tokens_per_second).toBeGreaterThanOrEqual(0);
  });

  test("a streamed response emits the standard events with increasing sequence numbers", async () => {
    await using t = await startTestServer(
      new ScriptedEngine({ script: [{ text: "one two three" }], tokensPerSecond: 500 }),
    );
    const stream = await t.client.responses.create({ model: "scripted", input: "count", stream: true });
    const events = [];
    for await (const event of stream) events.push(event);
    // Deltas produced in one event-loop turn are merged into one, so count runs, not deltas.
    const types = events.map((e) => e.type).filter((type, i, all) => type !== all[i - 1]);
    expect(types).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const done = events.find((e) => e.type === "response.output_text.done");
    expect(done && "text" in done && done.text).toBe("one two three");
    const streamed = events.map((e) => (e.type === "response.output_text.delta" ? e.delta : "")).join("");
    expect(streamed).toBe("one two three");
  });

  test("previous_response_id chains turns and reuses the cached prefix", async () => {
    await using t = await startTestServer(new ScriptedEngine());
    const first = await t.client.responses.create({ model: "scripted", input: "alpha" });
    const second = await t.client.responses.create({
      model: "scripted",
      input: "beta",
      previous_response_id: first.id,
    });
    expect(second.output_text).toBe("You said: beta");
    expect(second.previous_response_id).toBe(first.id);
    // Everything of turn one (input and output) is cached; only "beta" is new.
    expect(second.usage?.input_tokens_details.cached_tokens).toBe(
      first.usage!.input_tokens + first.usage!.output_tokens + 1,
    );
  });

  test("max_output_tokens ends the response incomplete", async () => {
    await using t = await startTestServer(new ScriptedEngine({ script: [{ text: "a b c d e f" }] }));
    const response = await t.client.responses.create({ model: "scripted", input: "x", max_output_tokens: 2 });
    expect(response.status).toBe("incomplete");
    expect(response.incomplete_details?.reason).toBe("max_output_tokens");
    expect(response.output_text).toBe("a b");
  });

  test("function calls come out as function_call items and take their outputs back", async () => {
    const engine = new ScriptedEngine({
      script: [{ toolCalls: [{ name: "read_file", arguments: '{"path":"a.ts"}' }] }, { text: "done" }],
    });
    await using t = await startTestServer(engine);
    const tools = [
      { type: "function" as const, name: "read_file", parameters: { type: "object" }, strict: false },
      { type: "web_search" as const },
    ];
    const first = await t.client.responses.create({ model: "scripted", input: "read a.ts", tools });
    const call = first.output.find((item) => item.type === "function_call");
    expect(call).toMatchObject({ type: "function_call", name: "read_file", arguments: '{"path":"a.ts"}' });
    if (call?.type !== "function_call") throw new Error("no call");

    await expect(
      t.client.responses.create({ model: "scripted", previous_response_id: first.id, input: "no output" }),
    ).rejects.toMatchObject({ status: 400, error: { param: "input" } });

    const second = await t.client.responses.create({
      model: "scripted",
      previous_response_id: first.id,
      input: [{ type: "function_call_output", call_id: call.call_id, output: "contents" }],
      tools,
    });
    expect(second.output_text).toBe("done");
  });

  test("generate:false over HTTP pre-warms without output", async () => {
    await using t = await startTestServer(new ScriptedEngine());
    const warm = await t.client.responses.create({
      model: "scripted",
      input: [{ role: "developer", content: "You are Spark." }],
      generate: false,
    } as never);
    expect(warm.output).toEqual([]);
    expect(warm.usage?.output_tokens).toBe(0);
    const next = await t.client.responses.create({
      model: "scripted",
      input: "hi",
      previous_response_id: warm.id,
    });
    expect(next.usage?.input_tokens_details.cached_tokens).toBeGreaterThan(0);
  });

  test("Predicted Outputs: accepted and rejected prediction tokens are reported", async () => {
    await using t = await startTestServer(
      new ScriptedEngine({ script: () => ({ text: "const a = 1; const b = 2;" }) }),
    );
    const chat = await t.client.chat.completions.create({
      model: "scripted",
      messages: [{ role: "user", content: "edit" }],
      prediction: { type: "content", content: "const a = 1; const c = 2;" },
    });
    expect(chat.choices[0]?.message.content).toBe("const a = 1; const b = 2;");
    // Scripted tokens: "const" " a" " =" " 1;" " const" " b" " =" " 2;" against the prediction's.
    expect(chat.usage?.completion_tokens_details).toMatchObject({
      accepted_prediction_tokens: 7,
      rejected_prediction_tokens: 1,
    });
    const response = await t.client.responses.create({
      model: "scripted",
      input: "edit",
      prediction: { type: "content", content: "const a = 1;" },
    } as never);
    const details = response.usage?.output_tokens_details as unknown as Record<string, number>;
    expect(details).toMatchObject({ accepted_prediction_tokens: 4, rejected_prediction_tokens: 0 });
  });

  test("models.list lists the served model", async () => {
    await using t = await startTestServer(new ScriptedEngine({ id: "tiny" }));
    const models = [];
    for await (const model of t.client.models.list()) models.push(model.id);
    expect(models).toEqual(["tiny"]);
  });

  test("chat.completions.create streams chunks, usage and [DONE]", async () => {
    await using t = await startTestServer(new ScriptedEngine({ script: [{ text: "fn main() {}" }] }));
    const stream = await t.client.chat.completions.create({
      model: "scripted",
      messages: [
        { role: "system", content: "code" },
        { role: "user", content: "rust main" },
      ],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let finish: string | null = null;
    let usage: { completion_tokens: number } | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe("fn main() {}");
    expect(finish).toBe("stop");
    expect(usage?.completion_tokens).toBe(3);
  });

  test("chat.completions honours stop sequences and returns tool calls", async () => {
    const engine = new ScriptedEngine({
      script: [{ text: "alpha beta STOP gamma" }, { toolCalls: [{ name: "ls", arguments: "{}" }] }],
    });
    await using t = await startTestServer(engine);
    const first = await t.client.chat.completions.create({
      model: "scripted",
      messages: [{ role: "user", content: "go" }],
      stop: ["STOP"],
    });
    expect(first.choices[0]?.message.content).toBe("alpha beta ");
    const second = await t.client.chat.completions.create({
      model: "scripted",
      messages: [{ role: "user", content: "list" }],
      tools: [{ type: "function", function: { name: "ls", parameters: { type: "object" } } }],
    });
    expect(second.choices[0]?.finish_reason).toBe("tool_calls");
    expect(second.choices[0]?.message.tool_calls?.[0]).toMatchObject({
      type: "function",
      function: { name: "ls" },
    });
  });
});

describe("Responses WebSocket mode with the SDK's ResponsesWS", () => {
  test("pre-warm with generate:false, then chain turns over one socket with store:false", async () => {
    await using t = await startTestServer(new ScriptedEngine());
    const ws = new ResponsesWS(t.client);
    const log = new EventLog(ws);
    try {
      ws.send({
        type: "response.create",
        model: "scripted",
        generate: false,
        store: false,
        input: [{ role: "developer", content: "You are Spark, a coding assistant." }],
      });
      const warm = await log.end();
      expect(warm.type).toBe("response.completed");
      const warmResponse = warm.response as {
        id: string;
        output: unknown[];
        usage: { output_tokens: number };
      };
      expect(warmResponse.output).toEqual([]);
      expect(warmResponse.usage.output_tokens).toBe(0);

      const mark = log.events.length;
      ws.send({
        type: "response.create",
        model: "scripted",
        store: false,
        previous_response_id: warmResponse.id,
        input: "first question",
      });
      const first = (await log.end(mark)).response as {
        id: string;
        usage: { input_tokens_details: { cached_tokens: number } };
      };
      expect(first.usage.input_tokens_details.cached_tokens).toBeGreaterThan(0);
      const text = log
        .since(mark)
        .filter((e) => e.type === "response.output_text.delta")
        .map((e) => e.delta)
        .join("");
      expect(text).toBe("You said: first question");

      const mark2 = log.events.length;
      ws.send({
        type: "response.create",
        model: "scripted",
        store: false,
        previous_response_id: first.id,
        input: "second",
      });
      const second = await log.end(mark2);
      expect(second.type).toBe("response.completed");
      const seqs = log.events.map((e) => e.sequence_number as number);
      expect(seqs).toEqual(seqs.map((_, i) => i));
    } finally {
      ws.close();
    }
    expect(log.errors).toEqual([]);
  });

  test("response.cancel stops decoding and ends the response incomplete/cancelled", async () => {
    const words = Array.from({ length: 1000 }, (_, i) => `w${i}`).join(" ");
    await using t = await startTestServer(
      new ScriptedEngine({ script: [{ text: words }], tokensPerSecond: 200 }),
    );
    const ws = new ResponsesWS(t.client);
    const log = new EventLog(ws);
    try {
      ws.send({ type: "response.create", model: "scripted", input: "go" });
      await log.type("response.output_text.delta");
      ws.sendRaw(JSON.stringify({ type: "response.cancel" }));
      const end = await log.end();
      expect(end.type).toBe("response.incomplete");
      const response = end.response as {
        incomplete_details: { reason: string };
        usage: { output_tokens: number };
      };
      expect(response.incomplete_details.reason).toBe("cancelled");
      expect(response.usage.output_tokens).toBeLessThan(1000);

      // The connection stays usable, and response.interrupt is accepted too.
      const mark = log.events.length;
      ws.send({ type: "response.create", model: "scripted", input: "again" });
      await log.type("response.output_text.delta", mark);
      ws.sendRaw(JSON.stringify({ type: "response.interrupt" }));
      expect((await log.end(mark)).type).toBe("response.incomplete");
    } finally {
      ws.close();
    }
  });

  test("response.steer ends the running response as steered and continues with the new input", async () => {
    const words = Array.from({ length: 1000 }, (_, i) => `w${i}`).join(" ");
    const engine = new ScriptedEngine({
      tokensPerSecond: 200,
      script: (request) => {
        const last = request.messages.at(-1);
        return { text: last?.role === "user" && last.content === "use tabs" ? "OK, tabs." : words };
      },
    });
    await using t = await startTestServer(engine);
    const ws = new ResponsesWS(t.client);
    const log = new EventLog(ws);
    try {
      ws.send({ type: "response.create", model: "scripted", input: "indent it" });
      const created = await log.type("response.created");
      const firstId = (created.response as { id: string }).id;
      await log.type("response.output_text.delta");
      ws.send({ type: "response.steer", previous_response_id: firstId, input: "use tabs" });

      const accepted = await log.type("response.steer.accepted");
      expect(accepted.steer).toMatchObject({ previous_response_id: firstId });
      const steered = await log.end(log.events.indexOf(accepted));
      expect(steered.type).toBe("response.incomplete");
      expect((steered.response as { incomplete_details: { reason: string } }).incomplete_details.reason).toBe(
        "steered",
      );

      const successorCreated = await log.type("response.created", log.events.indexOf(steered));
      const successor = successorCreated.response as { id: string; previous_response_id: string };
      expect(successor.previous_response_id).toBe(firstId);
      const mark = log.events.indexOf(successorCreated);
      const end = await log.end(mark);
      expect(end.type).toBe("response.completed");
      const text = log
        .since(mark)
        .filter((e) => e.type === "response.output_text.delta")
        .map((e) => e.delta)
        .join("");
      expect(text).toBe("OK, tabs.");
      // The continuation is built on what was streamed: everything before the steer is cached.
      const usage = (
        end.response as { usage: { input_tokens: number; input_tokens_details: { cached_tokens: number } } }
      ).usage;
      expect(usage.input_tokens - usage.input_tokens_details.cached_tokens).toBeLessThanOrEqual(3);
    } finally {
      ws.close();
    }
  });

  test("a steer that arrives after a cancel does not revive the response", async () => {
    const words = Array.from({ length: 1000 }, (_, i) => `w${i}`).join(" ");
    await using t = await startTestServer(
      new ScriptedEngine({ script: [{ text: words }], tokensPerSecond: 200 }),
    );
    const ws = new ResponsesWS(t.client);
    const log = new EventLog(ws);
    try {
      ws.send({ type: "response.create", model: "scripted", input: "go" });
      const id = ((await log.type("response.created")).response as { id: string }).id;
      await log.type("response.output_text.delta");
      ws.sendRaw(JSON.stringify({ type: "response.cancel" }));
      ws.send({ type: "response.steer", previous_response_id: id, input: "more" });
      const end = await log.end();
      expect((end.response as { incomplete_details: { reason: string } }).incomplete_details.reason).toBe(
        "cancelled",
      );
      expect((await log.type("response.steer.failed", 0)).error).toMatchObject({
        code: "response_already_completed",
      });
      expect(log.events.filter((e) => e.type === "response.created")).toHaveLength(1);
    } finally {
      ws.close();
    }
  });

  test("steering a finished or unknown response fails with a steer error", async () => {
    await using t = await startTestServer(new ScriptedEngine());
    const ws = new ResponsesWS(t.client);
    const log = new EventLog(ws);
    try {
      ws.send({ type: "response.create", model: "scripted", input: "hi" });
      const done = (await log.end()).response as { id: string };
      ws.send({ type: "response.steer", previous_response_id: done.id, input: "late" });
      const failed = await log.type("response.steer.failed");
      expect(failed.error).toMatchObject({ code: "response_already_completed" });
      ws.send({ type: "response.steer", previous_response_id: "resp_nope", input: "x" });
      const unknown = await log.type("response.steer.failed", log.events.length);
      expect(unknown.error).toMatchObject({ code: "response_not_found" });
    } finally {
      ws.close();
    }
  });
});

describe("lean streaming", () => {
  test("a client that stops reading gets merged deltas later: all text, gapless sequence numbers", async () => {
    const words = Array.from({ length: 20_000 }, (_, i) => `w${i}`).join(" ");
    const engine = new ScriptedEngine({ script: [{ text: words }] });
    // Resolves once the engine has produced the whole answer, all of it sent while the client read nothing.
    let generated!: () => void;
    const allGenerated = new Promise<void>((resolve) => {
      generated = resolve;
    });
    const generate = engine.generate.bind(engine);
    engine.generate = async function* (request, options) {
      yield* generate(request, options);
      generated();
    };
    await using t = await startTestServer(engine);
    const { default: WebSocket } = await import("ws");
    const ws = new WebSocket(`${t.url.replace("http", "ws")}/v1/responses`);
    await new Promise((resolve) => ws.once("open", resolve));
    const events: { type: string; sequence_number: number; delta?: string }[] = [];
    const done = new Promise<void>((resolve) =>
      ws.on("message", (data) => {
        const event = JSON.parse(String(data));
        events.push(event);
        if (event.type === "response.completed") resolve();
      }),
    );
    const raw = (ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
    raw.pause();
    ws.send(JSON.stringify({ type: "response.create", model: "scripted", input: "go" }));
    await allGenerated;
    raw.resume();
    await done;
    ws.close();
    const deltas = events.filter((e) => e.type === "response.output_text.delta");
    expect(deltas.map((e) => e.delta).join("")).toBe(words);
    expect(deltas.length).toBeLessThan(20_000);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
  });
});
