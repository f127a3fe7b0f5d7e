import os from "node:os";
import path from "node:path";
import { ensureSyntheticModel, type SyntheticQuant } from "../synthetic/synthetic-model.js";

/** The synthetic models tests use, built once per machine into the temp directory. */
export function testModelPath(quant: SyntheticQuant = "Q8_0"): Promise<string> {
  return ensureSyntheticModel(path.join(os.tmpdir(), "spark-test-models"), "tiny", quant);
}
