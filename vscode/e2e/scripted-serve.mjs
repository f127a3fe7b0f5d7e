// `spark serve --engine scripted --script <file>` for the end-to-end test, for as long as the
// `--script` option is not wired into `spark serve` itself: the same stack (startServe) on the
// built dist/, with the script loader of src/cli/scripted-script.ts. Prints the address line
// `spark serve` prints. Usage: node scripted-serve.mjs <script.json> <port> <tokens-per-second>

import { loadScriptFile } from "../../dist/cli/scripted-script.js";
import { startServe } from "../../dist/cli/serve-command.js";
import { ScriptedEngine } from "../../dist/engine/scripted/scripted-engine.js";

const [file, port = "0", rate = "30"] = process.argv.slice(2);
const stack = await startServe({
  engine: new ScriptedEngine({ script: loadScriptFile(file), tokensPerSecond: Number(rate) }),
  port: Number(port),
  webDir: null,
});
process.stderr.write(`Spark is serving scripted\n  HTTP       ${stack.server.url}/v1\n`);
const stop = async () => {
  await stack.close();
  process.exit(0);
};
process.once("SIGINT", stop);
process.once("SIGTERM", stop);
