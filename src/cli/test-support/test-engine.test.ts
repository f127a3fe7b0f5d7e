import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, test } from "vitest";
import type { Engine } from "../../engine/engine.js";
import { scriptedTiers } from "../../runtime/test-support/scripted-tiers.js";
import { replacedTierLoader } from "../../runtime/tier-engines.js";
import { testEngineEnv, testEngineOptions, testEngineReplacement } from "./test-engine.js";

async function text(engine: Engine, input: string): Promise<string> {
  let out = "";
  for await (const event of engine.generate({ messages: [{ role: "user", content: input }] })) {
    if (event.type === "text") out += event.text;
  }
  return out;
}

describe("SPARK_TEST_ENGINE", () => {
  test("unset or empty: no test engine", () => {
    expect(testEngineOptions({})).toBeNull();
    expect(testEngineOptions({ SPARK_TEST_ENGINE: "" })).toBeNull();
    expect(testEngineReplacement({})).toBeNull();
  });

  test("the replacement serves the scripted engine and names it after the tier a runtime starts on", async () => {
    const replacement = testEngineReplacement(testEngineEnv())!;
    const served = await replacement.served();
    expect(served.info).toMatchObject({ id: "scripted", engine: "scripted" });
    expect(await text(served, "hi")).toBe("You said: hi");
    const load = replacedTierLoader("fast", replacement.startingTier);
    const fast = await load("fast", { engine: "llama", context: 4096 }, {});
    expect(fast.info).toMatchObject({ id: "fast", engine: "scripted", contextSize: 4096 });
  });

  test("a bad value is the error of the command that first needs the engine, not of the start", async () => {
    const replacement = testEngineReplacement({ SPARK_TEST_ENGINE: "scripted" })!;
    await expect(replacement.served()).rejects.toThrow(/^SPARK_TEST_ENGINE is not a JSON object/);
  });

  test("the environment testEngineEnv writes is read back: a script file and a pace", async () => {
    const file = path.join(await mkdtemp(path.join(os.tmpdir(), "spark-test-engine-")), "s.json");
    await writeFile(file, JSON.stringify([{ text: "scripted reply" }]));
    expect(testEngineOptions(testEngineEnv())).toEqual({});
    const options = testEngineOptions(testEngineEnv({ script: file, tokensPerSecond: 30 }));
    expect(options).toMatchObject({ tokensPerSecond: 30 });
    const engine = await scriptedTiers({ fast: options! })("fast", { engine: "llama" }, {});
    expect(engine.info).toMatchObject({ id: "fast", engine: "scripted" });
    expect(await text(engine, "hello")).toBe("scripted reply");
  });

  test("anything but an object of script and tokens_per_second is refused, naming the variable", () => {
    for (const value of ["scripted", "[]", '{"tokens_per_second":-1}', '{"speed":3}', '{"script":""}']) {
      expect(() => testEngineOptions({ SPARK_TEST_ENGINE: value })).toThrow(
        expect.objectContaining({
          code: "invalid_request",
          message: expect.stringContaining("SPARK_TEST_ENGINE"),
        }),
      );
    }
  });

  test("a script file that cannot be read is refused", () => {
    expect(() => testEngineOptions(testEngineEnv({ script: "/nowhere/script.json" }))).toThrow(
      expect.objectContaining({ code: "invalid_request" }),
    );
  });
});

describe("scriptedTiers", () => {
  test("the named tiers are scripted; `*` any other; without `*` the others load as their config says", async () => {
    const only = scriptedTiers({ deep: { script: [{ text: "deep" }] } });
    const deep = await only("deep", { engine: "llama", context: 4096 }, {});
    expect(deep.info).toMatchObject({ id: "deep", engine: "scripted", contextSize: 4096 });
    expect(await text(deep, "hi")).toBe("deep");
    const every = scriptedTiers({ "*": { script: [{ text: "any" }] } });
    expect(await text(await every("other", { engine: "llama" }, {}), "hi")).toBe("any");
  });
});
