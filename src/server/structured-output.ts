import type { Engine } from "../engine/engine.js";
import { outputGrammar } from "../engine/llama/output-grammar.js";
import { SparkError } from "../protocol/errors.js";
import type { OutputFormat } from "../protocol/output-format.js";

/**
 * Checks that `engine` can honour `format`: the embedded engine (and the scripted one, which
 * stands in for it in tests) enforces a schema with a grammar, so a keyword the grammar cannot
 * enforce is a 400 naming it under `param` (`text.format.schema.properties.email.format`); an
 * upstream gets the format unchanged and judges it itself.
 */
export function checkOutputFormat(engine: Engine, format: OutputFormat | undefined, param: string): void {
  if (!format || engine.info.engine === "upstream") return;
  try {
    outputGrammar(format);
  } catch (error) {
    if (!(error instanceof SparkError)) throw error;
    const where = error.param ? `${param}.${error.param}` : param;
    throw new SparkError(error.code, error.message.replace(`'${error.param}'`, `'${where}'`), {
      param: where,
    });
  }
}
