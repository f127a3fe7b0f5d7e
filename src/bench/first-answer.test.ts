import { expect, test } from "vitest";
import { testModelPath } from "../engine/test-support/test-model.js";
import { findLlamaServer } from "./internal/llama-server-binary.js";
import { firstAnswerScenario } from "./scenarios/first-answer.js";

// Speed is not asserted (that is what `spark bench` reports): the scenario launches the built CLI
// (dist/) twice in a fresh HOME and workspace, and llama-server where one is built, end to end.
test("first-answer: cold and warm launches of spark exec report their first answer token beside llama-server's", {
  timeout: 300_000,
}, async () => {
  const lines: string[] = [];
  const llamaServer = findLlamaServer();
  const rows = await firstAnswerScenario({
    // The agent's prompt is about 5,000 tokens of the tiny model's byte-level vocabulary.
    models: [{ label: "tiny", path: await testModelPath() }],
    llamaServer,
    contextSize: 16384,
    runs: 1,
    log: (line) => lines.push(line),
  });
  expect(rows.map((row) => row.metric)).toEqual([
    "launch -> first answer token, fresh HOME and workspace (cold) vs llama-server launch -> first token, tiny",
    "launch -> first answer token, again (warm) vs llama-server launch -> first token, tiny",
  ]);
  for (const row of rows) {
    expect(row.value).toBeGreaterThan(0);
    if ("binary" in llamaServer) expect(row.baseline).toBeGreaterThan(0);
    else expect(row.baseline).toBeNaN();
  }
  expect(lines.some((line) => line.startsWith("first-answer tiny run 1/1: cold"))).toBe(true);
});
