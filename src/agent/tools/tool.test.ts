import { describe, expect, test } from "vitest";
import { z } from "zod";
import { tempWorkspace } from "./test-support/temp-workspace.js";
import { beginWriting, parametersOf, runTool, type Tool, ToolError } from "./tool.js";

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

describe("runTool after a tool has begun writing", () => {
  test("an abort waits for the tool and returns its own result", async () => {
    await using t = await tempWorkspace();
    const during = new AbortController();
    let finishWriting = () => {};
    const written = new Promise<void>((resolve) => {
      finishWriting = resolve;
    });
    const writes = echoTool(async (_args, ctx) => {
      beginWriting(ctx);
      during.abort();
      await written;
      return { output: "wrote", isError: false };
    });
    const result = runTool(writes, '{"name":"a"}', t.context({ signal: during.signal }));
    let settled = false;
    void result.then(() => {
      settled = true;
    });
    // The abort has fired; once every pending callback has run, the answer still waits for the write.
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    finishWriting();
    expect(await result).toEqual({ output: "wrote", isError: false });
  });

  test("a failure while writing is reported as that failure, not as aborted", async () => {
    await using t = await tempWorkspace();
    const during = new AbortController();
    const fails = echoTool(async (_args, ctx) => {
      beginWriting(ctx);
      during.abort();
      await Promise.resolve();
      throw new ToolError("failed", "The patch was only partly applied.");
    });
    expect(await runTool(fails, '{"name":"a"}', t.context({ signal: during.signal }))).toEqual({
      output: "The patch was only partly applied.",
      isError: true,
      errorCode: "failed",
    });
  });

  test("beginWriting after an abort throws, so nothing is written", async () => {
    await using t = await tempWorkspace();
    const during = new AbortController();
    let wrote = false;
    let triedToWrite: (error: unknown) => void = () => {};
    const tried = new Promise<unknown>((resolve) => {
      triedToWrite = resolve;
    });
    const late = echoTool(async (_args, ctx) => {
      await Promise.resolve();
      during.abort();
      try {
        beginWriting(ctx);
        wrote = true;
      } catch (error) {
        triedToWrite(error);
        throw error;
      }
      return { output: "wrote", isError: false };
    });
    expect(await runTool(late, '{"name":"a"}', t.context({ signal: during.signal }))).toMatchObject({
      errorCode: "aborted",
    });
    expect(await tried).toMatchObject({ name: "AbortError" });
    expect(wrote).toBe(false);
  });
});
