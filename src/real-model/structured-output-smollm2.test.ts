import { execFileSync } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Agent, OpenAIResponsesModel, run } from "@openai/agents";
import { zodResponseFormat, zodTextFormat } from "openai/helpers/zod";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { z } from "zod";
import { LlamaEngine } from "../engine/llama/llama-engine.js";
import { startTestServer, type TestServer } from "../server/test-support/test-server.js";
import { FETCH_SMOLLM2, smollm2Path } from "./test-support/smollm2.js";
import { sparkExec } from "./test-support/spark-exec.js";

/**
 * Structured output on SmolLM2-135M-Instruct through `spark serve`'s HTTP API, with the official
 * SDK's parse helpers and the Agents SDK: whatever a model this small makes of the question, the
 * grammar makes its answer parse as the schema. Greedy decoding, so each run is the same.
 */
const model = smollm2Path();
if (!model)
  console.log(`SmolLM2 structured output tests skipped: no model; fetch it with \`${FETCH_SMOLLM2}\``);

const Capital = z.object({
  country: z.string().max(24),
  capital: z.string().max(24),
  population_millions: z.number().int().min(0).max(2000),
  coastal: z.boolean(),
});

const QUESTION =
  "What is the capital of France? Answer as JSON with the country, its capital, population and whether it is coastal.";

describe.skipIf(!model)("structured output on SmolLM2-135M-Instruct", () => {
  const timeout = 240_000;
  let engine: LlamaEngine;
  let t: TestServer;

  beforeAll(async () => {
    engine = await LlamaEngine.create({ modelPath: model!, contextSize: 2048, sequences: 2 });
    t = await startTestServer(engine);
  }, timeout);

  afterAll(async () => {
    await t?.[Symbol.asyncDispose]();
    await engine?.dispose();
  });

  test(
    "responses.parse with zodTextFormat returns a parsed object of the schema",
    async () => {
      const response = await t.client.responses.parse({
        model: engine.info.id,
        input: QUESTION,
        text: { format: zodTextFormat(Capital, "capital") },
        max_output_tokens: 200,
      });
      expect(response.status).toBe("completed");
      expect(Capital.parse(response.output_parsed)).toEqual(response.output_parsed);
      expect(response.text?.format).toMatchObject({ type: "json_schema", name: "capital", strict: true });
    },
    timeout,
  );

  test(
    "responses.stream: the answer streams as output_text deltas and the final response parses",
    async () => {
      const stream = t.client.responses.stream({
        model: engine.info.id,
        input: QUESTION,
        text: { format: zodTextFormat(Capital, "capital") },
        max_output_tokens: 200,
      });
      let deltas = 0;
      let streamed = "";
      for await (const event of stream) {
        if (event.type === "response.output_text.delta") {
          deltas++;
          streamed += event.delta;
        }
      }
      const final = await stream.finalResponse();
      expect(deltas).toBeGreaterThan(1);
      expect(JSON.parse(streamed)).toEqual(final.output_parsed);
      expect(Capital.parse(final.output_parsed)).toEqual(final.output_parsed);
    },
    timeout,
  );

  test(
    "chat.completions.parse with zodResponseFormat returns a parsed message",
    async () => {
      const completion = await t.client.chat.completions.parse({
        model: engine.info.id,
        messages: [{ role: "user", content: QUESTION }],
        response_format: zodResponseFormat(Capital, "capital"),
        max_completion_tokens: 200,
      });
      const parsed = completion.choices[0]?.message.parsed;
      expect(completion.choices[0]?.finish_reason).toBe("stop");
      expect(Capital.parse(parsed)).toEqual(parsed);
    },
    timeout,
  );

  test(
    "the Agents SDK's outputType: an Agent run against Spark ends with a typed final output",
    async () => {
      const agent = new Agent({
        name: "Geographer",
        instructions: "You answer questions about countries.",
        outputType: Capital,
        model: new OpenAIResponsesModel(t.client, engine.info.id),
        modelSettings: { maxTokens: 200 },
      });
      const result = await run(agent, QUESTION);
      expect(Capital.parse(result.finalOutput)).toEqual(result.finalOutput);
    },
    timeout,
  );

  test(
    "with tools offered too, the answer still conforms (a call or the schema, never free text)",
    async () => {
      const response = await t.client.responses.parse({
        model: engine.info.id,
        input: QUESTION,
        tools: [
          {
            type: "function",
            name: "lookup_country",
            description: "Looks a country up.",
            parameters: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
            strict: false,
          },
        ],
        text: { format: zodTextFormat(Capital, "capital") },
        max_output_tokens: 200,
      });
      const call = response.output.find((item) => item.type === "function_call");
      if (call) expect(call).toMatchObject({ name: "lookup_country" });
      else expect(Capital.parse(response.output_parsed)).toEqual(response.output_parsed);
    },
    timeout,
  );

  test(
    "tools and text.format: a reply that calls a tool ends with its calls (it went on in free text outside the schema), and the answer after the tool's output parses under the schema",
    async () => {
      const tools = [
        {
          type: "function" as const,
          name: "lookup_country",
          description: "Looks a country up: its capital, population and coast.",
          parameters: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
          strict: false,
        },
      ];
      const format = zodTextFormat(Capital, "capital");
      const first = await t.client.responses.create({
        model: engine.info.id,
        input: "Call lookup_country to look up France, then answer as JSON with its capital.",
        tools,
        text: { format },
        max_output_tokens: 200,
      });
      const calls = first.output.filter((item) => item.type === "function_call");
      expect(calls.length).toBeGreaterThan(0);
      expect(first.output.filter((item) => item.type !== "function_call")).toEqual([]);
      const answer = await t.client.responses.parse({
        model: engine.info.id,
        input: [
          {
            role: "user",
            content: "Call lookup_country to look up France, then answer as JSON with its capital.",
          },
          ...calls,
          ...calls.map((call) => ({
            type: "function_call_output" as const,
            call_id: call.call_id,
            output: JSON.stringify({
              country: "France",
              capital: "Paris",
              population_millions: 68,
              coastal: true,
            }),
          })),
        ],
        tools,
        // A model this small calls the tool again under "auto" (a call is the grammar's other way);
        // "none", as after an agent's last round of tools, leaves the answer alone.
        tool_choice: "none",
        text: { format },
        max_output_tokens: 200,
      });
      expect(answer.status).toBe("completed");
      expect(Capital.parse(answer.output_parsed)).toEqual(answer.output_parsed);
    },
    timeout,
  );

  test(
    "spark exec --output-schema: the agent's final answer is JSON of the schema (the real binary)",
    async () => {
      const repo = await mkdtemp(path.join(os.tmpdir(), "spark-smollm2-schema-"));
      execFileSync("git", ["init", "-q"], { cwd: repo });
      await writeFile(path.join(repo, "schema.json"), JSON.stringify(z.toJSONSchema(Capital)));
      const run = await sparkExec(
        ["exec", "--model", model!, "--ctx-size", "4096", "--output-schema", "schema.json", QUESTION],
        repo,
        { SPARK_SESSIONS_DIR: await mkdtemp(path.join(os.tmpdir(), "spark-smollm2-sessions-")) },
        timeout - 10_000,
      );
      expect(run.stderr).not.toMatch(/^spark: /m);
      expect(run.code).toBe(0);
      const answer = JSON.parse(run.stdout) as unknown;
      expect(Capital.parse(answer)).toEqual(answer);
    },
    timeout,
  );

  test(
    "a schema feature the grammar cannot enforce is a 400 naming it, and nothing is generated",
    async () => {
      const Mail = z.object({ to: z.email() });
      await expect(
        t.client.responses.parse({
          model: engine.info.id,
          input: "Write an email address.",
          text: { format: zodTextFormat(Mail, "mail") },
        }),
      ).rejects.toMatchObject({
        status: 400,
        error: { type: "invalid_request_error", param: "text.format.schema.properties.to.format" },
      });
    },
    timeout,
  );
});
