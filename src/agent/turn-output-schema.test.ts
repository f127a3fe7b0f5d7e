import { describe, expect, test } from "vitest";
import { HOST_REQUEST_SCHEMAS } from "../protocol/agent-requests.js";
import { agentHarness } from "./test-support/agent-harness.js";
import { call, recorded } from "./test-support/scripted-replies.js";

const SCHEMA = { type: "object", properties: { files: { type: "integer" } }, required: ["files"] };

describe("a turn's output schema (spark exec --output-schema)", () => {
  test("every model response of the turn is asked for it, after a tool call too; the next turn is free text", async () => {
    const model = recorded([call("list_dir", { path: "." }), { text: '{"files": 1}' }, { text: "Bye." }]);
    await using h = await agentHarness({ "a.txt": "a" }, { script: model.script });
    await h.thread.startTurn("how many files?", { outputSchema: SCHEMA });
    await h.thread.startTurn("thanks");
    const format = { type: "json_schema", name: "output", schema: SCHEMA, strict: true };
    expect(model.requests.map((request) => request.format)).toEqual([format, format, undefined]);
    const answer = h.events.find((e) => e.type === "item.completed" && e.item.type === "agent_message");
    expect(answer).toMatchObject({ item: { text: '{"files": 1}' } });
  });

  test("turn.start's output_schema is a bounded JSON Schema object", () => {
    const schema = HOST_REQUEST_SCHEMAS["turn.start"];
    const base = { type: "turn.start", thread_id: "t1", input: "hi" };
    expect(schema.safeParse({ ...base, output_schema: SCHEMA }).success).toBe(true);
    expect(schema.safeParse({ ...base, output_schema: [SCHEMA] }).success).toBe(false);
    let deep: Record<string, unknown> = { type: "string" };
    for (let i = 0; i < 30; i++) deep = { items: deep };
    expect(schema.safeParse({ ...base, output_schema: deep }).success).toBe(false);
  });
});
