import { describe, expect, test } from "vitest";
import { z } from "zod";
import { tempWorkspace } from "./test-support/temp-workspace.js";
import { parametersOf, runTool, type Tool, ToolError } from "./tool.js";

const schema = z.strictObject({ name: z.string(), count: z.number().int().min(1).default(1) });

function echoTool(run: Tool<z.infer<typeof schema>>["run"]): Tool<z.infer<typeof schema>> {
  return { name: "echo", description: "Echoes.", parameters: parametersOf(schema), schema, run };
}

const echo = echoTool(async (args) => ({ output: `${args.name} x${args.count}`, isError: false }));

describe("runTool", () => {
  test("parses, validates and runs, applying defaults", async () => {
    await using t = await tempWorkspace();
    expect(await runTool(echo, '{"name":"hi"}', t.context())).toEqual({ output: "hi x1", isError: false });
  });

  test("bad JSON becomes an error result the model can act on", async () => {
    await using t = await tempWorkspace();
    const result = await runTool(echo, '{"name": "hi"', t.context());
    expect(result).toMatchObject({ isError: true, errorCode: "invalid_arguments" });
    expect(result.output).toContain("not valid JSON");
    expect(result.output).toContain("Send one JSON object");
  });

  test.each([
    ["a wrong type", '{"name": 5}', "'name'"],
    ["a missing field", "{}", "'name'"],
    ["an unknown field", '{"name":"a","verbose":true}', "verbose"],
    ["an out-of-range number", '{"name":"a","count":0}', "'count'"],
    ["not an object", "[1,2]", "expected object"],
  ])("%s names the field and lists the parameters", async (_name, json, mention) => {
    await using t = await tempWorkspace();
    const result = await runTool(echo, json, t.context());
    expect(result).toMatchObject({ isError: true, errorCode: "invalid_arguments" });
    expect(result.output).toContain(mention);
    expect(result.output).toContain('"properties"');
  });

  test("an empty argument string means no arguments", async () => {
    await using t = await tempWorkspace();
    const result = await runTool(echo, "", t.context());
    expect(result.output).toContain("'name'");
  });

  test("ToolErrors keep their code; other failures become failed; neither throws", async () => {
    await using t = await tempWorkspace();
    const denied = echoTool(async () => {
      throw new ToolError("not_allowed", "Not here.");
    });
    expect(await runTool(denied, '{"name":"a"}', t.context())).toEqual({
      output: "Not here.",
      isError: true,
      errorCode: "not_allowed",
    });
    const broken = echoTool(() => {
      throw new TypeError("boom");
    });
    expect(await runTool(broken, '{"name":"a"}', t.context())).toMatchObject({
      isError: true,
      errorCode: "failed",
      output: "echo failed: boom",
    });
  });

  test("an abort answers aborted at once, before or during the call", async () => {
    await using t = await tempWorkspace();
    const before = new AbortController();
    before.abort();
    let ran = false;
    const marks = echoTool(async () => {
      ran = true;
      return { output: "", isError: false };
    });
    expect(await runTool(marks, '{"name":"a"}', t.context({ signal: before.signal }))).toMatchObject({
      output: "aborted",
      isError: true,
      errorCode: "aborted",
    });
    expect(ran).toBe(false);

    const during = new AbortController();
    const hangs = echoTool(() => {
      queueMicrotask(() => during.abort());
      return new Promise(() => {});
    });
    expect(await runTool(hangs, '{"name":"a"}', t.context({ signal: during.signal }))).toMatchObject({
      output: "aborted",
      errorCode: "aborted",
    });
  });
});
