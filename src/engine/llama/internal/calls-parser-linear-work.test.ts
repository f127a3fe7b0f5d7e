import { describe, expect, test } from "vitest";
import {
  CALL_FAMILIES,
  type CallFamily,
  familyParser,
  parsePieces,
  type ShapedReply,
} from "./test-support/call-families.js";

/**
 * Regression: every token of a streamed call re-scanned the call from its start (and the XML and
 * Gemma decoders re-decoded it), so a long `apply_patch` streamed in quadratic time. The parser
 * counts the characters it examines; fed a character at a time, a reply 4 times as long must cost
 * about 4 times the work (it cost 16 times), in every family. No clocks: the count is exact.
 */

const SIZE = 2000;

/** Patch text of about `length` characters, with quotes, escapes and non-ASCII on every line. */
function patchText(length: number): string {
  let text = "*** Begin Patch\n*** Update File: src/a.ts\n@@ function f() {\n";
  for (let i = 0; text.length < length; i++) {
    text += `-  const v${i} = "old\\t";\n+  const v${i} = "new <|\\"|> é 😀";\n`;
  }
  return text.slice(0, length);
}

/** Replies that grow with `length` where the parser may have re-scanned: each a different part of it. */
const SHAPES: Record<string, (length: number, family: CallFamily) => ShapedReply> = {
  "a long string argument (apply_patch)": (length) => ({
    reasoning: "",
    before: "Patching.",
    calls: [{ name: "apply_patch", arguments: { patch: patchText(length), paths: ["src/a.ts"] } }],
    after: "",
  }),
  "a long value that is not a string (typed once whole)": (length) => ({
    reasoning: "",
    before: "",
    calls: [
      {
        name: "apply_patch",
        arguments: { patch: "x", options: { lines: patchText(length).split("\n"), nested: { deep: [[1]] } } },
      },
    ],
    after: "",
  }),
  "a call in another key order (released whole)": (length, family) => ({
    reasoning: "",
    before: "",
    calls: [{ name: "apply_patch", arguments: { patch: patchText(length) }, reordered: family.reorders }],
    after: "",
  }),
  "long reasoning, text and white space around a call": (length, family) => ({
    reasoning: family.syntax.reasoning ? `Think ${"and think, ".repeat(length / 22)}done` : "",
    before: `Look${" \n".repeat(length / 4)}here ${"word ".repeat(length / 10)}end`,
    calls: [{ name: "apply_patch", arguments: { patch: "x" } }],
    after: family.textAfter ? `Done ${"more words ".repeat(length / 10)}end` : "",
  }),
};

/** Characters the parser examines for `reply`, fed a character at a time. */
function workFor(family: CallFamily, reply: ShapedReply): { length: number; work: number } {
  const output = family.write(reply);
  const work = { chars: 0 };
  const out = parsePieces(familyParser(family, { work }), output.split(""));
  expect(out.filter((item) => item.type === "call")).toHaveLength(reply.calls.length);
  return { length: output.length, work: work.chars };
}

describe.each(CALL_FAMILIES)("$name: a streamed reply is not re-scanned per token", (family) => {
  test.each(Object.keys(SHAPES))("%s: 4 times the text, about 4 times the work", (shape) => {
    const small = workFor(family, SHAPES[shape]!(SIZE, family));
    const large = workFor(family, SHAPES[shape]!(4 * SIZE, family));
    expect(large.length).toBeGreaterThan(3.5 * small.length);
    // Linear: the ratio of the work follows the ratio of the lengths (a re-scan makes it its square).
    expect(large.work / small.work).toBeLessThan((1.2 * large.length) / small.length);
    // And a few looks per character (in text, about the markers' lengths), not thousands.
    expect(large.work / large.length).toBeLessThan(64);
  });
});
