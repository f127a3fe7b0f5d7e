import { z } from "zod";

/**
 * Structured output: the answer is JSON, of a given schema or of any object. Responses carries it
 * as `text.format`, Chat Completions as `response_format` (the schema nested under `json_schema`);
 * both become one {@link OutputFormat} for the engine.
 */
export type OutputFormat =
  | { type: "json_object" }
  | {
      type: "json_schema";
      name: string;
      schema: Record<string, unknown>;
      description?: string;
      strict?: boolean;
    };

/** The largest schema accepted, as JSON text (UTF-16 code units). */
export const MAX_SCHEMA_CHARS = 256 * 1024;
/** The deepest nesting of objects and arrays inside a schema. */
export const MAX_SCHEMA_DEPTH = 24;

/** A format name, as the OpenAI API bounds it. */
const formatName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "a format name is 1-64 letters, digits, _ or -");

/** A JSON Schema object, bounded in size and nesting (reject, never clamp). */
export const jsonSchemaObject = z.record(z.string(), z.unknown()).superRefine((schema, context) => {
  const problem = schemaBoundsProblem(schema);
  if (problem) context.addIssue({ code: "custom", message: problem });
});

const jsonSchemaFields = {
  name: formatName,
  schema: jsonSchemaObject,
  description: z
    .string()
    .max(64 * 1024)
    .nullish(),
  strict: z.boolean().nullish(),
};

/** Responses' `text.format`: `text`, `json_object`, or `json_schema` with its fields alongside. */
export const textFormatSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text") }).loose(),
  z.object({ type: z.literal("json_object") }).loose(),
  z.object({ type: z.literal("json_schema"), ...jsonSchemaFields }).loose(),
]);
export type TextFormat = z.infer<typeof textFormatSchema>;

/** Chat Completions' `response_format`: the schema's fields under `json_schema`. */
export const responseFormatSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text") }).loose(),
  z.object({ type: z.literal("json_object") }).loose(),
  z
    .object({
      type: z.literal("json_schema"),
      json_schema: z.object(jsonSchemaFields).loose(),
    })
    .loose(),
]);
export type ResponseFormat = z.infer<typeof responseFormatSchema>;

/** The engine's format for a Responses `text.format`; undefined for plain text. */
export function outputFormatOfText(format: TextFormat | null | undefined): OutputFormat | undefined {
  if (!format || format.type === "text") return undefined;
  if (format.type === "json_object") return { type: "json_object" };
  return schemaFormat(format);
}

/** The engine's format for a Chat Completions `response_format`; undefined for plain text. */
export function outputFormatOfResponseFormat(
  format: ResponseFormat | null | undefined,
): OutputFormat | undefined {
  if (!format || format.type === "text") return undefined;
  if (format.type === "json_object") return { type: "json_object" };
  return schemaFormat(format.json_schema);
}

function schemaFormat(fields: {
  name: string;
  schema: Record<string, unknown>;
  description?: string | null;
  strict?: boolean | null;
}): OutputFormat {
  return {
    type: "json_schema",
    name: fields.name,
    schema: fields.schema,
    ...(fields.description ? { description: fields.description } : {}),
    ...(typeof fields.strict === "boolean" ? { strict: fields.strict } : {}),
  };
}

/** Why `schema` is out of bounds, or null. */
function schemaBoundsProblem(schema: Record<string, unknown>): string | null {
  if (nestedDeeperThan(schema, MAX_SCHEMA_DEPTH)) {
    return `a schema nests objects and arrays at most ${MAX_SCHEMA_DEPTH} levels deep`;
  }
  if (JSON.stringify(schema).length > MAX_SCHEMA_CHARS) {
    return `a schema is at most ${MAX_SCHEMA_CHARS} characters of JSON`;
  }
  return null;
}

/** Recursion is bounded by `depthLeft`, so hostile nesting cannot overflow the stack. */
function nestedDeeperThan(value: unknown, depthLeft: number): boolean {
  if (value === null || typeof value !== "object") return false;
  if (depthLeft === 0) return true;
  const children = Array.isArray(value) ? value : Object.values(value);
  return children.some((child) => nestedDeeperThan(child, depthLeft - 1));
}
