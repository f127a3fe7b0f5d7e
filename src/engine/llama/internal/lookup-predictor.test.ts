import type { Token } from "node-llama-cpp";
import { describe, expect, test } from "vitest";
import { LookupPredictor } from "./lookup-predictor.js";

// A tokenizer where every character is one token makes the predictor's behaviour exact to test.
const tokenize = (text: string) => [...text].map((ch) => ch.codePointAt(0)! as Token);
const detokenize = (tokens: Token[]) => String.fromCodePoint(...(tokens as number[]));

/** Simulates verification: accepts the draft while it matches `output`, returns the counts. */
function decode(predictor: LookupPredictor, output: string) {
  const target = tokenize(output);
  let at = 0;
  let accepted = 0;
  let rejected = 0;
  let steps = 0;
  while (at < target.length) {
    steps++;
    const draft = predictor.predictTokens() as Token[];
    let ok = 0;
    while (ok < draft.length && draft[ok] === target[at + ok]) ok++;
    accepted += ok;
    rejected += draft.length - ok;
    // The verified prefix plus the token the model sampled after it, one token at a time as
    // node-llama-cpp pushes them.
    const end = Math.min(target.length, at + ok + 1);
    for (; at < end; at++) predictor.pushTokens([target[at]!]);
  }
  return { accepted, rejected, steps };
}

function predictorFor(text: string, maxDraft = 8) {
  const predictor = new LookupPredictor();
  predictor.configure({ kind: "text", text, maxDraft, tokenize, detokenize: (tokens) => detokenize(tokens) });
  predictor.reset({ stateTokens: [] });
  return predictor;
}

describe("LookupPredictor", () => {
  const file = Array.from({ length: 40 }, (_, i) => `line ${i}: value${i} = compute(${i});`).join("\n");

  test("an exact prediction is drafted almost entirely, in drafts of the longest length", () => {
    const { accepted, rejected, steps } = decode(predictorFor(file, 16), file);
    expect(accepted).toBeGreaterThan(file.length * 0.85);
    expect(rejected).toBe(0);
    // 17 tokens a forward pass once the draft has grown from 4 to 16.
    expect(steps).toBeLessThan(file.length / 17 + 4);
  });

  test("drafts shrink on a refutation and grow back once drafts are used in full", () => {
    const edited = file.replace("line 5: value5", "line 5: other5");
    const { steps } = decode(predictorFor(file, 16), edited);
    expect(steps).toBeLessThan(edited.length / 17 + 16);
  });

  test("after an edit in the middle it re-synchronises and drafts the rest of the file", () => {
    const edited = file.replace(
      "line 20: value20 = compute(20);",
      "line 20: value20 = computeFaster(20, cache);",
    );
    const { accepted, rejected } = decode(predictorFor(file), edited);
    expect(accepted).toBeGreaterThan(edited.length * 0.8);
    expect(rejected).toBeLessThan(30);
  });

  test("once back in step after an edit, it drafts at full length at once", () => {
    const edited = file.replace(
      "line 20: value20 = compute(20);",
      "line 20: value20 = other(20, [1, 2, 3]);",
    );
    const predictor = predictorFor(file, 16);
    const target = tokenize(edited);
    const drafts: number[] = [];
    for (let at = 0; at < target.length; ) {
      const draft = predictor.predictTokens() as Token[];
      drafts.push(draft.length);
      let ok = 0;
      while (ok < draft.length && draft[ok] === target[at + ok]) ok++;
      const end = Math.min(target.length, at + ok + 1);
      for (; at < end; at++) predictor.pushTokens([target[at]!]);
    }
    // Drafting stops inside the edit (nothing to draft from) and resumes after it.
    const gap = drafts.indexOf(0);
    expect(gap).toBeGreaterThan(0);
    const resumed = drafts.findIndex((length, i) => i > gap && length > 0);
    expect(drafts[resumed]).toBe(16);
  });

  test("in code that repeats itself, it finds its place after an edit, not the first look-alike", () => {
    const code = Array.from(
      { length: 30 },
      (_, i) => `function get${i}(value) {\n  if (value) {\n    return value;\n  }\n  return null;\n}\n`,
    ).join("");
    const edited = code.replace(
      "function get20(value) {\n  if (value) {",
      "function get20(value) {\n  if (value !== undefined) {",
    );
    const { accepted, rejected } = decode(predictorFor(code, 16), edited);
    expect(accepted).toBeGreaterThan(edited.length * 0.9);
    expect(rejected).toBeLessThan(20);
  });

  test("an unrelated prediction costs little: drafts shrink after refutations", () => {
    const { accepted, rejected } = decode(predictorFor("zzzz ".repeat(200)), file);
    expect(accepted).toBe(0);
    expect(rejected).toBeLessThan(20);
  });

  test("prompt lookup drafts from the conversation's tokens after a matching pattern", () => {
    const predictor = new LookupPredictor();
    const prompt = tokenize(`context: ${file}\nanswer: `);
    predictor.configure({ kind: "tokens", minPattern: 3, maxDraft: 8 }, prompt.length);
    predictor.reset({ stateTokens: prompt });
    const { accepted } = decode(predictor, file.slice(0, 400));
    expect(accepted).toBeGreaterThan(300);
  });

  test("prompt lookup also drafts from the output so far", () => {
    const lookupFor = () => {
      const predictor = new LookupPredictor();
      const prompt = tokenize("write the table twice\n");
      predictor.configure({ kind: "tokens", minPattern: 3, maxDraft: 8 }, prompt.length);
      predictor.reset({ stateTokens: prompt });
      return predictor;
    };
    const table = file.slice(0, 300);
    const once = decode(lookupFor(), `${table}\n`).accepted;
    const twice = decode(lookupFor(), `${table}\n${table}`).accepted;
    // Nothing of the table is in the prompt; most of its second copy is drafted from the first.
    expect(twice - once).toBeGreaterThan(250);
  });

  test("a prediction resumed in the middle of the output finds its place from the output so far", () => {
    const predictor = predictorFor(file, 16);
    const written = tokenize(file.slice(0, 200));
    // As node-llama-cpp resets it when evaluation goes on after a native run or a grammar.
    predictor.reset({ stateTokens: written });
    const target = file.slice(200);
    const draft = predictor.predictTokens() as Token[];
    expect(detokenize(draft)).toBe(target.slice(0, 16));
  });

  test("off drafts nothing", () => {
    const predictor = new LookupPredictor();
    predictor.configure({ kind: "off" });
    expect(predictor.predictTokens()).toEqual([]);
  });
});
