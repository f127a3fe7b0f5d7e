import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { ensureSyntheticModel, type SyntheticQuant } from "../synthetic/synthetic-model.js";

/** The synthetic models tests use, built once per machine into the temp directory. */
export function testModelPath(quant: SyntheticQuant = "Q8_0"): Promise<string> {
  return ensureSyntheticModel(path.join(os.tmpdir(), "spark-test-models"), "tiny", quant);
}

/**
 * The small trained model beside the repository (`../shared/models/stories260K.gguf`, see its
 * SOURCES.md), when it is there: tests that need a model's real choices (not a random model's
 * near-ties) use it.
 */
export function trainedTestModelPath(): string | undefined {
  const file = path.resolve(import.meta.dirname, "../../../../shared/models/stories260K.gguf");
  return existsSync(file) ? file : undefined;
}
