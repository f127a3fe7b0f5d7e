import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { testEngineEnv } from "../../test-support/test-engine.js";

/**
 * The environment of a `spark acp` under test, in `scratch`: the scripted engine playing `script`,
 * sessions, state and config of its own (no language servers after edits: they are another test's
 * subject, and slow to start), and none of the caller's Spark settings.
 */
export async function scriptedAcpEnv(scratch: string, script: unknown): Promise<NodeJS.ProcessEnv> {
  const scriptFile = path.join(scratch, "script.json");
  await writeFile(scriptFile, JSON.stringify(script));
  await mkdir(path.join(scratch, "config", "spark"), { recursive: true });
  await writeFile(path.join(scratch, "config", "spark", "config.toml"), "[diagnostics]\nenabled = false\n");
  const { SPARK_HOME: _, SPARK_API_KEY: __, SPARK_CONFIG: ___, ...inherited } = process.env;
  return {
    ...inherited,
    SPARK_SESSIONS_DIR: path.join(scratch, "sessions"),
    XDG_STATE_HOME: path.join(scratch, "state"),
    XDG_CONFIG_HOME: path.join(scratch, "config"),
    ...testEngineEnv({ script: scriptFile, tokensPerSecond: 200 }),
  };
}
