#!/usr/bin/env node
import module from "node:module";

// Compiled code is cached on disk (os.tmpdir()/node-compile-cache): the next start parses nothing.
module.enableCompileCache?.();
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
