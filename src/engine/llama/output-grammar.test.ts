import fc from "fast-check";
import { getLlama, type Llama, LlamaGrammar } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { SparkError } from "../../protocol/errors.js";
import type { OutputFormat } from "../../protocol/output-format.js";
import { callGrammar } from "./internal/call-grammar.js";
import { gbnfMatches } from "./internal/test-support/gbnf-matcher.js";
import { SPARK_CALL_SYNTAX } from "./internal/tool-call-syntax.js";
import { integerRange, outputGrammar, outputRule } from "./output-grammar.js";

const schema = (schema: Record<string, unknown>): OutputFormat => ({
  type: "json_schema",
  name: "t",
  schema,
});

/** JSON as the grammar writes it: `", "` between items and `": "` after keys, nothing else. */
function layout(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(layout).join(", ")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}: ${layout(v)}`)
      .join(", ")}}`;
  }
  return JSON.stringify(value);
}

/** What zod 4 and the OpenAI SDK's `zodTextFormat` send for a typical object. */
const ORDER = {
  $schema: "http://json-schema.org/draft-07/schema#",
  type: "object",
  properties: {
    name: { type: "string", maxLength: 5 },
    qty: { type: "integer", minimum: -9007199254740991, maximum: 9007199254740991 },
    price: { type: "number", minimum: 0 },
    tags: { maxItems: 2, type: "array", items: { type: "string" } },
    kind: { type: "string", enum: ["a", "b"] },
    note: { type: ["string", "null"] },
    d: {
      anyOf: [
        {
          type: "object",
          properties: { t: { type: "string", const: "x" } },
          required: ["t"],
          additionalProperties: false,
        },
        {
          type: "object",
          properties: { t: { type: "string", const: "y" }, v: { type: "boolean" } },
          required: ["t", "v"],
          additionalProperties: false,
        },
      ],
    },
  },
  required: ["name", "qty", "price", "tags", "kind", "note", "d"],
  additionalProperties: false,
};

describe("structured output grammar", () => {
  test("an answer of the schema matches; one breaking any constraint does not", () => {
    const grammar = outputGrammar(schema(ORDER));
    const good = {
      name: "pen",
      qty: -3,
      price: 1.5,
      tags: ["a"],
      kind: "b",
      note: null,
      d: { t: "y", v: true },
    };
    expect(gbnfMatches(grammar, layout(good))).toBe(true);
    const bad: Record<string, unknown>[] = [
      { ...good, name: "pencil" },
      { ...good, qty: 1.5 },
      { ...good, price: -1 },
      { ...good, tags: ["a", "b", "c"] },
      { ...good, kind: "c" },
      { ...good, d: { t: "x", v: true } },
      { ...good, extra: 1 },
    ];
    for (const value of bad) expect(gbnfMatches(grammar, layout(value)), layout(value)).toBe(false);
    const { note: _, ...missing } = good;
    expect(gbnfMatches(grammar, layout(missing))).toBe(false);
  });

  test("json_object is any object, and only an object", () => {
    const grammar = outputGrammar({ type: "json_object" });
    expect(gbnfMatches(grammar, layout({ a: [1, { b: null }] }))).toBe(true);
    expect(gbnfMatches(grammar, "[1]")).toBe(false);
    expect(gbnfMatches(grammar, '"text"')).toBe(false);
  });

  test("local references are followed, recursion included", () => {
    const tree = {
      $ref: "#/$defs/node",
      $defs: {
        node: {
          type: "object",
          properties: { v: { type: "integer" }, kids: { type: "array", items: { $ref: "#/$defs/node" } } },
          required: ["v", "kids"],
          additionalProperties: false,
        },
      },
    };
    const grammar = outputGrammar(schema(tree));
    // zod's nullable reference: a $ref as one option of an anyOf, definitions beside it.
    const nullable = outputGrammar(
      schema({ anyOf: [{ $ref: "#/$defs/node" }, { type: "null" }], $defs: tree.$defs }),
    );
    expect(gbnfMatches(nullable, "null")).toBe(true);
    expect(gbnfMatches(nullable, layout({ v: 1, kids: [] }))).toBe(true);
    expect(gbnfMatches(grammar, layout({ v: 1, kids: [{ v: 2, kids: [] }] }))).toBe(true);
    expect(gbnfMatches(grammar, layout({ v: 1, kids: [{ v: 2 }] }))).toBe(false);
  });

  test("optional properties may be left out, in declaration order", () => {
    const grammar = outputGrammar(
      schema({
        type: "object",
        properties: { a: { type: "boolean" }, b: { type: "null" } },
        required: ["b"],
      }),
    );
    expect(gbnfMatches(grammar, layout({ b: null }))).toBe(true);
    expect(gbnfMatches(grammar, layout({ a: true, b: null }))).toBe(true);
    expect(gbnfMatches(grammar, layout({ a: true }))).toBe(false);
  });

  test("an integer range matches exactly the integers inside it (property)", () => {
    const bounded = fc.integer({ min: -2_000_000, max: 2_000_000 });
    fc.assert(
      fc.property(bounded, bounded, fc.array(bounded, { maxLength: 8 }), (a, b, probes) => {
        const [low, high] = a <= b ? [a, b] : [b, a];
        const grammar = `root ::= ${integerRange(low, high)}\n`;
        for (const n of [low, high, low - 1, high + 1, 0, ...probes]) {
          expect(gbnfMatches(grammar, String(n)), `${n} in [${low}, ${high}]`).toBe(n >= low && n <= high);
        }
        expect(gbnfMatches(grammar, `0${Math.abs(low)}`)).toBe(false);
      }),
      { numRuns: 200 },
    );
  });

  test("any value of a generated schema matches its grammar; one with a required key left out does not (property)", () => {
    type Gen = { schema: Record<string, unknown>; value: fc.Arbitrary<unknown> };
    const leaf: fc.Arbitrary<Gen> = fc.oneof(
      fc.constant({ schema: { type: "boolean" }, value: fc.boolean() }),
      fc.constant({ schema: { type: "null" }, value: fc.constant(null) }),
      fc.integer({ min: -50, max: 50 }).chain((low) =>
        fc.integer({ min: low, max: low + 200 }).map((high) => ({
          schema: { type: "integer", minimum: low, maximum: high },
          value: fc.integer({ min: low, max: high }),
        })),
      ),
      fc.integer({ min: 0, max: 6 }).map((max) => ({
        schema: { type: "string", maxLength: max },
        value: fc.string({ maxLength: max, unit: "grapheme-ascii" }),
      })),
      fc.uniqueArray(fc.string({ maxLength: 4 }), { minLength: 1, maxLength: 4 }).map((options) => ({
        schema: { enum: options },
        value: fc.constantFrom(...options),
      })),
      fc.constant({ schema: { type: "number", minimum: 0 }, value: fc.integer({ min: 0, max: 10_000 }) }),
    );
    const gen: fc.Arbitrary<Gen> = fc.letrec<{ node: Gen }>((tie) => ({
      node: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        leaf,
        fc.tuple(tie("node"), fc.integer({ min: 0, max: 3 })).map(([item, max]) => ({
          schema: { type: "array", items: item.schema, maxItems: max },
          value: fc.array(item.value, { maxLength: max }),
        })),
        fc
          .uniqueArray(fc.tuple(fc.stringMatching(/^[a-z]{1,5}$/), tie("node")), {
            minLength: 1,
            maxLength: 4,
            selector: ([key]) => key,
          })
          .map((props) => ({
            schema: {
              type: "object",
              properties: Object.fromEntries(props.map(([key, node]) => [key, node.schema])),
              required: props.map(([key]) => key),
              additionalProperties: false,
            },
            value: fc
              .tuple(...props.map(([, node]) => node.value))
              .map((values) => Object.fromEntries(props.map(([key], i) => [key, values[i]]))),
          })),
      ),
    })).node;
    fc.assert(
      fc.property(
        gen.chain((g) => fc.tuple(fc.constant(g.schema), g.value)),
        ([generated, value]) => {
          const grammar = outputGrammar(schema(generated));
          expect(gbnfMatches(grammar, layout(value))).toBe(true);
          if (value !== null && typeof value === "object" && !Array.isArray(value)) {
            const [first] = Object.keys(value);
            const { [first!]: _, ...missing } = value as Record<string, unknown>;
            expect(gbnfMatches(grammar, layout(missing))).toBe(false);
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  test.each([
    [{ type: "string", pattern: "^a+$" }, "schema.pattern"],
    [{ type: "string", format: "email" }, "schema.format"],
    [{ type: "object", properties: { n: { type: "number", maximum: 3 } } }, "schema.properties.n.maximum"],
    [{ oneOf: [{ type: "string" }, { type: "integer" }] }, "schema.oneOf"],
    [{ type: "array", items: { type: "string", maxLength: 100_000 } }, "schema.items.maxLength"],
    [{ $ref: "https://example.com/s.json" }, "schema.$ref"],
    [{ $ref: "#/$defs/missing" }, "schema.$ref"],
    [{ $ref: "#/$defs/s", maxLength: 3, $defs: { s: { type: "string" } } }, "schema.maxLength"],
    [{ type: "string", anyOf: [{ $ref: "#/$defs/n" }], $defs: { n: { type: "null" } } }, "schema.type"],
    [{ $ref: "#/$defs/a", $defs: { a: { anyOf: [{ $ref: "#/$defs/a" }] } } }, "schema.$ref.anyOf[0].$ref"],
    [{ type: "integer", minimum: 5, maximum: 4 }, "schema.minimum"],
    [{ type: "color" }, "schema.type"],
    [{ anyOf: [{ type: "string" }, { allOf: [] }] }, "schema.anyOf[1].allOf"],
  ])("a feature the grammar cannot enforce is a 400 naming it: %j", (value, param) => {
    let caught: unknown;
    try {
      outputGrammar(schema(value));
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(SparkError);
    expect((caught as SparkError).status).toBe(400);
    expect((caught as SparkError).param).toBe(param);
    expect((caught as SparkError).message).toContain(param);
  });

  describe("llama.cpp", () => {
    let llama: Llama;
    beforeAll(async () => {
      llama = await getLlama({ gpu: false, build: "never", maxThreads: 1 });
    });
    afterAll(async () => {
      await llama.dispose();
    });

    test("reads every grammar built here, alone and beside a call grammar", () => {
      const formats: OutputFormat[] = [
        { type: "json_object" },
        schema(ORDER),
        schema({ type: "object", properties: { s: { type: "string", minLength: 2 } }, required: ["s"] }),
        schema({ type: "object", properties: { up: { anyOf: [{ $ref: "#" }, { type: "null" }] } } }),
        schema({ type: "object", additionalProperties: { type: "integer", minimum: 1, maximum: 12 } }),
      ];
      for (const format of formats) {
        expect(() => new LlamaGrammar(llama, { grammar: outputGrammar(format) })).not.toThrow();
        const both = callGrammar(SPARK_CALL_SYNTAX, [{ name: "look", parameters: { type: "object" } }], {
          withTrigger: true,
          or: (rules) => outputRule(rules, format),
        });
        expect(() => new LlamaGrammar(llama, { grammar: both })).not.toThrow();
      }
    });
  });
});
