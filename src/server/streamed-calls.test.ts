import { ResponsesWebSocketSession } from "openai/lib/responses/responses-websocket-session";
import { ResponsesWS } from "openai/resources/responses/ws";
import { describe, expect, test } from "vitest";
import type { GenerateRequest } from "../engine/engine.js";
import { ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import { startTestServer } from "./test-support/test-server.js";
import { EventLog } from "./test-support/ws-events.js";

/** A long patch, as a model writes one: many lines, so many argument tokens. */
const patch = [
  "*** Begin Patch",
  "*** Update File: src/math.ts",
  "@@ export function area(radius: number): number {",
  ...Array.from(
    { length: 40 },
    (_, i) => `-  const step${i} = radius * ${i};\n+  const step${i} = radius * ${i} + 1;`,
  ),
  "*** End Patch",
].join("\n");
const patchArguments = JSON.stringify({ patch });

const applyPatchTool = {
  type: "function" as const,
  name: "apply_patch",
  description: "Edit files with a patch.",
  parameters: { type: "object", properties: { patch: { type: "string" } }, required: ["patch"] },
  strict: false,
};
const readFileTool = {
  type: "function" as const,
  name: "read_file",
  parameters: { type: "object", properties: { path: { type: "string" } } },
  strict: false,
};

/** Paced so that each argument token leaves in its own event-loop turn (deltas of one turn merge). */
function patchEngine(tokensPerSecond = 500): ScriptedEngine {
  return new ScriptedEngine({
    script: [{ text: "Editing.", toolCalls: [{ name: "apply_patch", arguments: patchArguments }] }],
    tokensPerSecond,
  });
}

type AnyEvent = { type: string; [key: string]: unknown };

/** The argument deltas of one call, in order, checked to come before its `done` events. */
function argumentStream(events: AnyEvent[]): { deltas: string[]; done: AnyEvent; added: AnyEvent } {
  const added = events.find(
    (e) => e.type === "response.output_item.added" && (e.item as { type: string }).type === "function_call",
  )!;
  const itemId = (added.item as { id: string }).id;
  const doneAt = events.findIndex((e) => e.type === "response.function_call_arguments.done");
  const itemDoneAt = events.findIndex(
    (e) => e.type === "response.output_item.done" && (e.item as { id: string }).id === itemId,
  );
  const deltaEvents = events.filter((e) => e.type === "response.function_call_arguments.delta");
  for (const delta of deltaEvents) {
    expect(delta).toMatchObject({ item_id: itemId, output_index: added.output_index });
    expect(typeof delta.sequence_number).toBe("number");
    expect(events.indexOf(delta)).toBeGreaterThan(events.indexOf(added));
    expect(events.indexOf(delta)).toBeLessThan(doneAt);
  }
  expect(doneAt).toBeLessThan(itemDoneAt);
  return { deltas: deltaEvents.map((e) => e.delta as string), done: events[doneAt]!, added };
}

describe("function call arguments stream as they are generated", () => {
  test("Responses over HTTP/SSE: many argument deltas before the call completes, in the SDK's shapes", async () => {
    await using t = await startTestServer(patchEngine());
    const stream = await t.client.responses.create({
      model: "scripted",
      input: "fix area",
      tools: [applyPatchTool],
      stream: true,
    });
    const events: AnyEvent[] = [];
    for await (const event of stream) events.push(event as unknown as AnyEvent);

    const { deltas, done, added } = argumentStream(events);
    expect(added.item).toMatchObject({
      type: "function_call",
      status: "in_progress",
      name: "apply_patch",
      arguments: "",
    });
    expect(deltas.length).toBeGreaterThan(10);
    expect(deltas.join("")).toBe(patchArguments);
    expect(done).toMatchObject({ item_id: (added.item as { id: string }).id, arguments: patchArguments });
    const completed = events.at(-1) as { type: string; response: { output: unknown[] } };
    expect(completed.type).toBe("response.completed");
    expect(completed.response.output.at(-1)).toMatchObject({
      type: "function_call",
      status: "completed",
      arguments: patchArguments,
    });
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
  });

  test("the SDK's stream helper accumulates the streamed call into its final response", async () => {
    await using t = await startTestServer(patchEngine());
    const stream = t.client.responses.stream({
      model: "scripted",
      input: "fix area",
      tools: [applyPatchTool],
    });
    let argumentDeltas = 0;
    stream.on("response.function_call_arguments.delta", () => argumentDeltas++);
    const response = await stream.finalResponse();
    expect(argumentDeltas).toBeGreaterThan(10);
    expect(response.output_text).toBe("Editing.");
    const call = response.output.find((item) => item.type === "function_call");
    expect(call).toMatchObject({ name: "apply_patch", arguments: patchArguments, status: "completed" });
  });

  test("Responses over WebSocket (ResponsesWS): the same deltas, and the SDK's lane helper accepts them", async () => {
    await using t = await startTestServer(patchEngine());
    const ws = new ResponsesWS(t.client);
    const log = new EventLog(ws);
    // The lane helper sends at once, so it needs the socket open (ResponsesWS itself queues).
    if (ws.socket.readyState !== 1) await new Promise<void>((resolve) => ws.socket.once("open", resolve));
    const session = new ResponsesWebSocketSession(ws, {
      maxLanes: 4,
      maxBufferedEvents: 10_000,
      maxBufferedBytes: 16 << 20,
    });
    try {
      const lane = session.lane();
      lane.create({ model: "scripted", input: "fix area", tools: [applyPatchTool] });
      const response = await lane.finalResponse();
      expect(response.status).toBe("completed");
      const call = response.output.find((item) => item.type === "function_call");
      expect(call).toMatchObject({ name: "apply_patch", arguments: patchArguments, status: "completed" });

      await log.end(0);
      const { deltas } = argumentStream(log.events);
      expect(deltas.length).toBeGreaterThan(10);
      expect(deltas.join("")).toBe(patchArguments);
      expect(log.errors).toEqual([]);
    } finally {
      session.close();
      ws.close();
    }
  });

  test("a call cancelled while it streams ends incomplete and owes no output", async () => {
    await using t = await startTestServer(patchEngine(500));
    const ws = new ResponsesWS(t.client);
    const log = new EventLog(ws);
    try {
      ws.send({ type: "response.create", model: "scripted", input: "fix area", tools: [applyPatchTool] });
      await log.type("response.function_call_arguments.delta");
      ws.sendRaw(JSON.stringify({ type: "response.cancel" }));
      const end = await log.end();
      expect(end.type).toBe("response.incomplete");
      expect(log.events.some((e) => e.type === "response.function_call_arguments.done")).toBe(false);
      const itemDone = log.events.find(
        (e) =>
          e.type === "response.output_item.done" && (e.item as { type: string }).type === "function_call",
      );
      expect(itemDone?.item).toMatchObject({ status: "incomplete", name: "apply_patch" });
      const partial = (itemDone?.item as { arguments: string } | undefined)?.arguments ?? "";
      expect(partial.length).toBeGreaterThan(0);
      expect(patchArguments.startsWith(partial) && partial !== patchArguments).toBe(true);

      // The cut-off call is not part of the conversation: the next turn needs no output for it.
      const mark = log.events.length;
      ws.send({
        type: "response.create",
        model: "scripted",
        previous_response_id: (end.response as { id: string }).id,
        input: "never mind",
      });
      expect((await log.end(mark)).type).toBe("response.completed");
    } finally {
      ws.close();
    }
  });

  test("Chat Completions SSE: the id and name in the first tool_calls chunk, then argument chunks", async () => {
    await using t = await startTestServer(patchEngine());
    const stream = await t.client.chat.completions.create({
      model: "scripted",
      messages: [{ role: "user", content: "fix area" }],
      tools: [{ type: "function", function: { name: "apply_patch", parameters: applyPatchTool.parameters } }],
      stream: true,
    });
    const parts: { index: number; id?: string; name?: string; arguments?: string }[] = [];
    let finish: string | null = null;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      for (const call of choice?.delta.tool_calls ?? []) {
        parts.push({
          index: call.index,
          ...(call.id ? { id: call.id } : {}),
          ...(call.function?.name ? { name: call.function.name } : {}),
          ...(call.function?.arguments ? { arguments: call.function.arguments } : {}),
        });
      }
      finish = choice?.finish_reason ?? finish;
    }
    expect(parts[0]).toMatchObject({ index: 0, name: "apply_patch" });
    expect(parts[0]?.id).toMatch(/^call_/);
    expect(parts.slice(1).every((part) => part.index === 0 && !part.id && !part.name)).toBe(true);
    expect(parts.length).toBeGreaterThan(10);
    expect(parts.map((part) => part.arguments ?? "").join("")).toBe(patchArguments);
    expect(finish).toBe("tool_calls");

    // The SDK's own accumulator agrees.
    const helper = t.client.chat.completions.stream({
      model: "scripted",
      messages: [{ role: "user", content: "fix area" }],
      tools: [{ type: "function", function: { name: "apply_patch", parameters: applyPatchTool.parameters } }],
    });
    const final = await helper.finalChatCompletion();
    expect(final.choices[0]?.message.tool_calls?.[0]).toMatchObject({
      type: "function",
      function: { name: "apply_patch", arguments: patchArguments },
    });
  });
});

describe("tool_choice", () => {
  /** An engine that remembers what each request asked of it. */
  function recordingEngine() {
    const requests: GenerateRequest[] = [];
    const engine = new ScriptedEngine({
      script: (request) => {
        requests.push(request);
        return { toolCalls: [{ name: "read_file", arguments: '{"path":"a.ts"}' }] };
      },
    });
    return { engine, requests };
  }

  test("Responses: required and a named function reach the engine; none offers no tools", async () => {
    const { engine, requests } = recordingEngine();
    await using t = await startTestServer(engine);
    const tools = [readFileTool, applyPatchTool];
    const required = await t.client.responses.create({
      model: "scripted",
      input: "x",
      tools,
      tool_choice: "required",
    });
    expect(required.tool_choice).toBe("required");
    await t.client.responses.create({
      model: "scripted",
      input: "x",
      tools,
      tool_choice: { type: "function", name: "read_file" },
    });
    await t.client.responses.create({ model: "scripted", input: "x", tools, tool_choice: "none" });
    await t.client.responses.create({ model: "scripted", input: "x", tools });
    expect(requests.map((r) => r.toolChoice)).toEqual([
      "required",
      { name: "read_file" },
      undefined,
      undefined,
    ]);
    expect(requests.map((r) => r.tools?.length ?? 0)).toEqual([2, 2, 0, 2]);
  });

  test("Chat Completions: required and a named function reach the engine", async () => {
    const { engine, requests } = recordingEngine();
    await using t = await startTestServer(engine);
    const tools = [{ type: "function" as const, function: { name: "read_file" } }];
    const messages = [{ role: "user" as const, content: "x" }];
    await t.client.chat.completions.create({ model: "scripted", messages, tools, tool_choice: "required" });
    const named = await t.client.chat.completions.create({
      model: "scripted",
      messages,
      tools,
      tool_choice: { type: "function", function: { name: "read_file" } },
    });
    expect(named.choices[0]?.finish_reason).toBe("tool_calls");
    expect(requests.map((r) => r.toolChoice)).toEqual(["required", { name: "read_file" }]);
  });

  test("a function name not among the tools is a 400 that names it, on both APIs", async () => {
    const { engine, requests } = recordingEngine();
    await using t = await startTestServer(engine);
    await expect(
      t.client.responses.create({
        model: "scripted",
        input: "x",
        tools: [readFileTool],
        tool_choice: { type: "function", name: "write_file" },
      }),
    ).rejects.toMatchObject({
      status: 400,
      error: { param: "tool_choice.name", message: expect.stringContaining("'write_file'") },
    });
    await expect(
      t.client.chat.completions.create({
        model: "scripted",
        messages: [{ role: "user", content: "x" }],
        tools: [{ type: "function", function: { name: "read_file" } }],
        tool_choice: { type: "function", function: { name: "write_file" } },
      }),
    ).rejects.toMatchObject({
      status: 400,
      error: { param: "tool_choice.function.name", message: expect.stringContaining("'write_file'") },
    });
    expect(requests).toEqual([]);
  });
});

describe("reasoning is streamed as reasoning, never as the answer", () => {
  const reasoningEngine = () =>
    new ScriptedEngine({
      script: () => ({ reasoning: "The user wants a greeting.", text: "Hello there." }),
      tokensPerSecond: 2000,
    });

  test("Responses: a reasoning item with reasoning_text deltas, before the message", async () => {
    await using t = await startTestServer(reasoningEngine());
    const stream = t.client.responses.stream({ model: "scripted", input: "greet" });
    const types: string[] = [];
    let reasoning = "";
    stream.on("event", (event) => types.push(event.type));
    stream.on("response.reasoning_text.delta", (event) => {
      reasoning += event.delta;
    });
    const response = await stream.finalResponse();
    expect(reasoning).toBe("The user wants a greeting.");
    expect(response.output_text).toBe("Hello there.");
    expect(response.output[0]).toMatchObject({
      type: "reasoning",
      status: "completed",
      content: [{ type: "reasoning_text", text: "The user wants a greeting." }],
    });
    expect(response.output[1]).toMatchObject({ type: "message" });
    expect(types.indexOf("response.reasoning_text.done")).toBeLessThan(
      types.indexOf("response.output_text.delta"),
    );
  });

  test("Chat Completions: reasoning_content deltas and message field, apart from content", async () => {
    await using t = await startTestServer(reasoningEngine());
    const messages = [{ role: "user" as const, content: "greet" }];
    const stream = await t.client.chat.completions.create({ model: "scripted", messages, stream: true });
    let reasoning = "";
    let content = "";
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as
        | { content?: string | null; reasoning_content?: string }
        | undefined;
      reasoning += delta?.reasoning_content ?? "";
      content += delta?.content ?? "";
    }
    expect(reasoning).toBe("The user wants a greeting.");
    expect(content).toBe("Hello there.");
    const whole = await t.client.chat.completions.create({ model: "scripted", messages });
    expect(whole.choices[0]?.message).toMatchObject({
      content: "Hello there.",
      reasoning_content: "The user wants a greeting.",
    });
  });
});
