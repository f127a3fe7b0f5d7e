import { describe, expect, test } from "vitest";
import { chatCompletionBodySchema } from "./chat-completions.js";
import { SparkError } from "./errors.js";
import { MAX_SCHEMA_CHARS, outputFormatOfResponseFormat, outputFormatOfText } from "./output-format.js";
import { responseCreateBodySchema } from "./responses-request.js";
import { validate } from "./validate.js";

function refusal(run: () => unknown): SparkError {
  try {
    run();
  } catch (error) {
    if (error instanceof SparkError) return error;
    throw error;
  }
  throw new Error("accepted");
}

describe("text.format and response_format at the edge", () => {
  test("both shapes become one engine format; text is no format", () => {
    const schema = { type: "object", properties: { a: { type: "boolean" } } };
    const text = validate(responseCreateBodySchema, {
      input: "x",
      text: { format: { type: "json_schema", name: "a", schema, strict: true, description: "An a." } },
    });
    const chat = validate(chatCompletionBodySchema, {
      messages: [{ role: "user", content: "x" }],
      response_format: {
        type: "json_schema",
        json_schema: { name: "a", schema, strict: true, description: "An a." },
      },
    });
    const expected = { type: "json_schema", name: "a", schema, strict: true, description: "An a." };
    expect(outputFormatOfText(text.text?.format)).toEqual(expected);
    expect(outputFormatOfResponseFormat(chat.response_format)).toEqual(expected);
    expect(outputFormatOfText({ type: "text" })).toBeUndefined();
    expect(outputFormatOfResponseFormat({ type: "json_object" })).toEqual({ type: "json_object" });
  });

  test("a schema larger than the bound is refused, not cut", () => {
    const error = refusal(() =>
      validate(responseCreateBodySchema, {
        input: "x",
        text: {
          format: { type: "json_schema", name: "a", schema: { description: "d".repeat(MAX_SCHEMA_CHARS) } },
        },
      }),
    );
    expect(error.param).toBe("text.format.schema");
    expect(error.message).toContain(String(MAX_SCHEMA_CHARS));
  });

  test("a format name outside the API's alphabet is refused", () => {
    const error = refusal(() =>
      validate(chatCompletionBodySchema, {
        messages: [{ role: "user", content: "x" }],
        response_format: { type: "json_schema", json_schema: { name: "a b", schema: {} } },
      }),
    );
    expect(error.param).toBe("response_format.json_schema.name");
  });
});
