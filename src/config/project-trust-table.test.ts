import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  PROJECT_TRUST_TABLE,
  settingsNeedingTrust,
  type TrustEntry,
  trustEntryAt,
} from "./project-trust-table.js";
import { sparkConfigSchema } from "./spark-config.js";

/** Every setting the schema accepts, as a path (`*` for a table's own keys, such as tier names). */
function schemaPaths(schema: z.ZodType, path: string[] = []): string[][] {
  const def = schema.def as { type: string };
  switch (def.type) {
    case "optional":
    case "nullable":
    case "default":
      return schemaPaths((schema as z.ZodOptional<z.ZodType>).unwrap(), path);
    case "object":
      return Object.entries((schema as z.ZodObject).shape).flatMap(([key, field]) =>
        schemaPaths(field as z.ZodType, [...path, key]),
      );
    case "record":
      return schemaPaths((schema as z.ZodRecord).valueType as z.ZodType, [...path, "*"]);
    case "union": {
      const options = (schema as z.ZodUnion).options as z.ZodType[];
      const all = options.flatMap((option) => schemaPaths(option, path));
      return [...new Map(all.map((p) => [p.join("."), p])).values()];
    }
    case "array":
      return schemaPaths((schema as z.ZodArray<z.ZodType>).element, path);
    case "string":
    case "number":
    case "boolean":
    case "enum":
    case "literal":
      return [path];
    default:
      // A wrapper this walk does not open could hide settings: teach the walk, do not skip it.
      throw new Error(`the walk does not know the schema type '${def.type}' at '${path.join(".")}'`);
  }
}

/** The settings of `schema` that `table` does not classify. */
function unclassified(schema: z.ZodType, table: TrustEntry = PROJECT_TRUST_TABLE): string[] {
  return schemaPaths(schema)
    .filter((path) => trustEntryAt(path, table) === undefined)
    .map((path) => path.join("."));
}

/** Table entries that name a field the schema does not have (left behind by a rename). */
function stale(schema: z.ZodType, entry: TrustEntry = PROJECT_TRUST_TABLE, path: string[] = []): string[] {
  if (entry === "safe" || typeof entry === "function") return [];
  if ("each" in entry) return stale(schema, entry.each, [...path, "*"]);
  const known = schemaPaths(schema).map((p) => p.join("."));
  return Object.entries(entry.fields).flatMap(([key, child]) => {
    const at = [...path, key].join(".");
    const exists = known.some((p) => p === at || p.startsWith(`${at}.`));
    return exists ? stale(schema, child, [...path, key]) : [at];
  });
}

describe("the project trust table", () => {
  it("classifies every key of the config schema (a new key fails here until it has a line)", () => {
    expect(schemaPaths(sparkConfigSchema).length).toBeGreaterThan(30);
    expect(unclassified(sparkConfigSchema)).toEqual([]);
    expect(stale(sparkConfigSchema)).toEqual([]);
  });

  it("the walk finds an unclassified key, at the top and inside a tier", () => {
    const top = sparkConfigSchema.extend({ telemetry_url: z.string().optional() });
    expect(unclassified(top)).toEqual(["telemetry_url"]);
    const tier = z.object({ tiers: z.record(z.string(), z.object({ engine: z.string(), gpu: z.number() })) });
    expect(unclassified(tier)).toEqual(["tiers.*.gpu"]);
    expect(stale(z.object({ tiers: z.record(z.string(), z.object({})) }))).toContain("default_tier");
  });

  it("classifies [limits] as a whole section: a key added to it needs trust without a new line", () => {
    const limits = sparkConfigSchema.extend({
      limits: z.object({ max_output_tokens: z.number().optional() }).optional(),
    });
    expect(unclassified(limits)).toEqual([]);
    expect(settingsNeedingTrust({ limits: { max_tool_rounds: 10_000 } } as never, {})).toEqual([
      {
        path: ["limits", "max_tool_rounds"],
        reason: "sets this limit to 10000 (a project's limits apply only once trusted)",
      },
    ]);
  });

  it("a project may restate a tier's engine but not choose it", () => {
    const find = (project: object, user: object = {}) =>
      settingsNeedingTrust(project as never, user as never).map((f) => `${f.path.join(".")}: ${f.reason}`);
    expect(find({ tiers: { fast: { engine: "upstream" } } })).toEqual([
      "tiers.fast.engine: an upstream engine sends prompts over the network",
    ]);
    expect(find({ tiers: { fast: { engine: "llama" } } })).toEqual([]);
    const upstream = { tiers: { deep: { engine: "upstream", url: "http://gpu/v1", model: "m" } } };
    expect(find({ tiers: { deep: { engine: "upstream" } } }, upstream)).toEqual([]);
    expect(find({ tiers: { deep: { engine: "llama" } } }, upstream)).toEqual([
      "tiers.deep.engine: runs the embedded engine in place of the tier's own",
    ]);
  });
});
