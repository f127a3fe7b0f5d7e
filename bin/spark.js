#!/usr/bin/env node
import { existsSync } from "node:fs";
import module from "node:module";
import { fileURLToPath } from "node:url";

// Compiled code is cached on disk (os.tmpdir()/node-compile-cache): the next start parses less.
module.enableCompileCache?.();
// Ink takes only `throttle` from es-toolkit's compat barrel, which loads some 400 modules: a third
// of the time to the terminal's prompt box. Ink gets the one module that defines it instead.
module.registerHooks?.({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    if (specifier !== "es-toolkit/compat" || !context.parentURL?.includes("/node_modules/ink/"))
      return resolved;
    const throttle = new URL("function/throttle.mjs", resolved.url);
    return existsSync(fileURLToPath(throttle)) ? { ...resolved, url: throttle.href } : resolved;
  },
});
const { main } = await import("../dist/cli/main.js");

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    console.error(`spark: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  },
);
