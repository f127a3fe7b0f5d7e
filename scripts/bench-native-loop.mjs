#!/usr/bin/env node
// What each kept part of the engine patch's native decode loop gains on an agent's traffic, as ratios
// measured in one process on one GGUF: an engine with the native loop against the same engine with
// it off (node-llama-cpp's batched path), alternating A B, B A, medians. Needs a local engine build
// (`npm run build:engine`) and a built dist/ (`npm run build`).
//
//   node scripts/bench-native-loop.mjs [model.gguf] [runs] [answer|edit]   (both by default)
//
// Rows: a plain answer (the loop and its persistent threadpool), an edit that copies a file the
// conversation has read with prompt lookup on (as every request with tools has it: the loop's
// prompt-lookup drafts and their cost model), and the same edit in the native loop with prompt
// lookup against without it.
import os from "node:os";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const { LlamaEngine } = await import(path.join(root, "dist/engine/llama/llama-engine.js"));
const modelPath =
  process.argv[2] ||
  path.join(os.homedir(), ".cache", "spark", "test-models", "SmolLM2-135M-Instruct.Q4_1.gguf");
const runs = Number(process.argv[3] || 3);
const only = process.argv[4];

const file = Array.from({ length: 60 }, (_, i) =>
  i % 3 === 0 ? `const v${i} = load(${i});` : `total += v${i - (i % 3)} * ${i};`,
).join("\n");
const answer = [{ role: "user", content: "Explain in a few sentences what a hash map is." }];
const edit = [
  {
    role: "user",
    content: `Here is inventory.js:\n\n${file}\n\nRewrite the whole file, renaming load to fetchItem.`,
  },
];

const create = (nativeLoop) => LlamaEngine.create({ modelPath, contextSize: 4096, nativeLoop });
const native = await create(true);
const batched = await create(false);
if (!native.binary.nativeLoop)
  throw new Error("no native loop in this addon: run npm run build:engine first");

async function rate(engine, request) {
  const started = performance.now();
  let result;
  for await (const event of engine.generate({ temperature: 0, ...request }))
    if (event.type === "done") result = event.result;
  return {
    tokensPerSecond: (result.usage.outputTokens * 1000) / (performance.now() - started),
    usage: result.usage,
  };
}
const median = (values) => values.toSorted((a, b) => a - b)[Math.floor(values.length / 2)];

/** `a` against `b`, alternating which goes first; both warmed once (the prompt evaluated). */
async function compare(label, a, b) {
  await rate(a.engine, { ...a.request, maxOutputTokens: 1 });
  await rate(b.engine, { ...b.request, maxOutputTokens: 1 });
  const rates = { a: [], b: [] };
  let last;
  for (let i = 0; i < runs; i++) {
    for (const side of i % 2 === 0 ? ["a", "b"] : ["b", "a"]) {
      const measured = await rate({ a, b }[side].engine, { a, b }[side].request);
      rates[side].push(measured.tokensPerSecond);
      if (side === "a") last = measured.usage;
    }
  }
  const [ra, rb] = [median(rates.a), median(rates.b)];
  const drafts = `${last.acceptedPredictionTokens} of ${last.acceptedPredictionTokens + last.rejectedPredictionTokens} drafted accepted`;
  console.log(
    `| ${label} | ${(ra / rb).toFixed(2)}x | ${ra.toFixed(1)} vs ${rb.toFixed(1)} tok/s; ${drafts} |`,
  );
}

console.log(
  `${path.basename(modelPath)}, ${native.threads ?? ""} threads, median of ${runs}, load average ${os.loadavg()[0].toFixed(1)}`,
);
console.log("| decode tokens/s | ratio | details |\n| --- | --- | --- |");
const answerRequest = { messages: answer, maxOutputTokens: 96 };
const editRequest = { messages: edit, maxOutputTokens: 96, promptLookup: true };
if (only !== "edit")
  await compare(
    "answer: native loop vs batched path",
    { engine: native, request: answerRequest },
    { engine: batched, request: answerRequest },
  );
if (only !== "answer") {
  await compare(
    "edit, prompt lookup: native loop vs batched path",
    { engine: native, request: editRequest },
    { engine: batched, request: editRequest },
  );
  await compare(
    "edit in the native loop: prompt lookup vs none",
    { engine: native, request: editRequest },
    { engine: native, request: { ...editRequest, promptLookup: false } },
  );
}
await native.dispose();
await batched.dispose();
