/**
 * The test entry point: bin/spark.js, with the scripted engine in place of the models when
 * SPARK_TEST_ENGINE asks for it (test-engine.ts), registered through runtime/engine-replacement.ts. Tests
 * start the binary through it (spark-binary.ts's `sparkBin`); the shipped bin/spark.js knows
 * nothing of the variable. scripts/build-test-bin.mjs bundles it into dist-test/spark-test-bin.js,
 * with every production module imported from dist/, so it shares their instances with bin/spark.js.
 */
import { replaceEngines } from "../../runtime/engine-replacement.js";
import { testEngineReplacement } from "./test-engine.js";

const replacement = testEngineReplacement();
if (replacement) replaceEngines(replacement);
// @ts-expect-error bin/spark.js is plain JavaScript without types; it runs the CLI on import.
await import("../../../bin/spark.js");
