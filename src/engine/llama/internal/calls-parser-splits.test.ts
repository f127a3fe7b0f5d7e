import fc from "fast-check";
import { describe, expect, test } from "vitest";
import type { ParsedOutput } from "./output-parser.js";
import {
  CALL_FAMILIES,
  type CallFamily,
  familyParser,
  parsePieces,
  type ShapedReply,
  shapedReply,
} from "./test-support/call-families.js";

/**
 * How a reply streams is not part of what it means: every family's model output, split at every
 * offset and at random cuts, parses to what it parses to whole — the same calls, the same argument
 * text streamed, the same text and reasoning, the same call boundaries. Broken output too: where a
 * call stops fitting its syntax, what was read is text, and what follows is read again.
 */

/** Joins adjacent text, reasoning and argument pieces: how they are cut is not part of the contract. */
function merged(items: readonly ParsedOutput[]): ParsedOutput[] {
  const out: ParsedOutput[] = [];
  for (const item of items) {
    const last = out.at(-1);
    if ((item.type === "text" || item.type === "reasoning") && last?.type === item.type)
      last.text += item.text;
    else if (item.type === "call_delta" && last?.type === "call_delta") last.delta += item.delta;
    else out.push({ ...item });
  }
  return out;
}

function parse(family: CallFamily, pieces: readonly string[]): ParsedOutput[] {
  return merged(parsePieces(familyParser(family), pieces));
}

function cutAt(text: string, cuts: readonly number[]): string[] {
  const points = [...new Set(cuts.map((cut) => cut % (text.length + 1)))].sort((a, b) => a - b);
  const pieces: string[] = [];
  let from = 0;
  for (const point of points) {
    pieces.push(text.slice(from, point));
    from = point;
  }
  pieces.push(text.slice(from));
  return pieces;
}

/** Text without its white space: where the template's white space ends and the text's starts is the parser's call. */
const squash = (text: string) => text.replace(/\s+/g, "");

/** What the parse of a whole reply must hold: its calls, each streamed whole, and its text. */
function expectMeaning(family: CallFamily, reply: ShapedReply, out: readonly ParsedOutput[]): void {
  const calls = out.flatMap((item) => (item.type === "call" ? [item] : []));
  expect(calls.map((call) => ({ name: call.name, arguments: JSON.parse(call.arguments) }))).toEqual(
    reply.calls.map((call) => ({ name: call.name, arguments: JSON.parse(JSON.stringify(call.arguments)) })),
  );
  // Each call's deltas, between its start and its end, are its arguments.
  let streamed: string | undefined;
  for (const item of out) {
    if (item.type === "call_start") streamed = "";
    else if (item.type === "call_delta") streamed += item.delta;
    else if (item.type === "call") {
      expect(streamed).toBe(item.arguments);
      streamed = undefined;
    }
  }
  const text = out.map((item) => (item.type === "text" ? item.text : "")).join("");
  expect(squash(text)).toBe(squash(reply.before + reply.after));
  const reasoning = out.map((item) => (item.type === "reasoning" ? item.text : "")).join("");
  expect(squash(reasoning)).toBe(squash(reply.reasoning));
  if (family.stops.length > 0 && out.some((item) => item.type === "stop"))
    expect(out.at(-1)?.type).toBe("stop");
}

/** An edit that breaks a reply: where (taken modulo its length), what, and the character it puts in. */
const edit = fc.record({
  at: fc.nat(),
  kind: fc.constantFrom("drop", "double", "replace", "cut"),
  character: fc.constantFrom(...'x \n"{}<>[],:|\\'),
});

function applyEdit(
  text: string,
  { at, kind, character }: { at: number; kind: string; character: string },
): string {
  const i = at % (text.length + 1);
  if (kind === "drop") return text.slice(0, i) + text.slice(i + 1);
  if (kind === "double") return text.slice(0, i) + text.slice(i, i + 1) + text.slice(i);
  if (kind === "replace") return text.slice(0, i) + character + text.slice(i + 1);
  return text.slice(0, i);
}

/** Expects `pieces` to parse as `whole` did (compared as JSON first: deep equality is slow). */
function expectSame(family: CallFamily, pieces: readonly string[], whole: readonly ParsedOutput[]): void {
  const split = parse(family, pieces);
  if (JSON.stringify(split) !== JSON.stringify(whole))
    expect({ pieces, parsed: split }).toEqual({ pieces, parsed: whole });
}

describe.each(CALL_FAMILIES)("$name replies split anywhere parse as they do whole", (family) => {
  test("at every offset, and a character at a time", () => {
    fc.assert(
      fc.property(shapedReply(family), (reply) => {
        const output = family.write(reply);
        const whole = parse(family, [output]);
        expectMeaning(family, reply, whole);
        for (let at = 0; at <= output.length; at++)
          expectSame(family, [output.slice(0, at), output.slice(at)], whole);
        expectSame(family, output.split(""), whole);
      }),
      { numRuns: 20 },
    );
  });

  test("broken replies too: a character dropped, doubled or replaced, or the reply cut short", () => {
    fc.assert(
      fc.property(shapedReply(family), fc.array(edit, { minLength: 1, maxLength: 3 }), (reply, edits) => {
        const output = edits.reduce(applyEdit, family.write(reply));
        const whole = parse(family, [output]);
        for (let at = 0; at <= output.length; at++)
          expectSame(family, [output.slice(0, at), output.slice(at)], whole);
        expectSame(family, output.split(""), whole);
      }),
      { numRuns: 20 },
    );
  });

  test("at random cuts", () => {
    fc.assert(
      fc.property(shapedReply(family), fc.array(fc.nat(), { maxLength: 24 }), (reply, cuts) => {
        const output = family.write(reply);
        expectSame(family, cutAt(output, cuts), parse(family, [output]));
      }),
      { numRuns: 80 },
    );
  });
});
