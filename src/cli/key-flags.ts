import { readFileSync } from "node:fs";
import { SparkError } from "../protocol/errors.js";

/** A key file holds one key: its text without surrounding white space (a trailing newline). */
export function readKeyFile(file: string, flag: string): string {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new SparkError("invalid_request", `${flag} ${file}: ${(error as Error).message}`, { cause: error });
  }
  const key = text.trim();
  if (key === "" || /\s/.test(key)) {
    throw new SparkError("invalid_request", `${flag} ${file}: the file must hold one key (no spaces).`);
  }
  return key;
}

/**
 * Every local user can read a process's arguments (`ps`, /proc/PID/cmdline): a key given as a flag
 * still works, with this warning on stderr, for scripts written before the environment and file ways.
 */
export function warnKeyOnCommandLine(flag: string, envName: string, fileFlag: string): void {
  process.stderr.write(
    `spark: warning: ${flag} shows the key to every local user (ps); pass it in $${envName} or ${fileFlag} instead.\n`,
  );
}

/**
 * The key from `--X-file`, else from `--X` (with a warning), else from the environment variables
 * in order; undefined when none is set.
 */
export function keyFromFlags(
  given: { key: string | undefined; file: string | undefined },
  names: { flag: string; fileFlag: string; env: string[] },
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  if (given.file !== undefined) return readKeyFile(given.file, names.fileFlag);
  if (given.key !== undefined) {
    warnKeyOnCommandLine(names.flag, names.env[0]!, names.fileFlag);
    return given.key;
  }
  for (const name of names.env) if (env[name]) return env[name];
  return undefined;
}
