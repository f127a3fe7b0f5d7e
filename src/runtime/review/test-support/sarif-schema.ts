import { readFileSync } from "node:fs";
import { Ajv, type ErrorObject } from "ajv";
import addFormatsModule from "ajv-formats";

type FormatsPlugin = (ajv: Ajv) => Ajv;
const addFormats = ((addFormatsModule as unknown as { default?: FormatsPlugin }).default ??
  addFormatsModule) as unknown as FormatsPlugin;

/** A validator with uri, date-time and the other formats checked. */
export function newAjv(): Ajv {
  // The SARIF schema's `language` pattern has a stray `]`, an error only under the `u` flag.
  const ajv = new Ajv({ strict: false, allErrors: true, unicodeRegExp: false });
  addFormats(ajv);
  return ajv;
}

/** The vendored SARIF 2.1.0 schema (see README.md), as Ajv's draft-07 reads it. */
function sarifSchema(): Record<string, unknown> {
  const schema = JSON.parse(
    readFileSync(new URL("./sarif-2.1.0-rtm.5.json", import.meta.url), "utf8"),
  ) as Record<string, unknown>;
  const { $schema: _, id, ...rest } = schema;
  return { $id: id, ...rest };
}

const validate = newAjv().compile(sarifSchema());

/** The schema's complaints about `log` (none: it is valid SARIF 2.1.0). */
export function sarifErrors(log: unknown): ErrorObject[] {
  return validate(log) ? [] : [...(validate.errors ?? [])];
}
