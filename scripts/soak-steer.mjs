#!/usr/bin/env node
// The steering soak (src/real-model/steer-soak.test.ts) with many trials:
//   npm run soak:steer -- [--trials N] [--seed S] [--load [N]]
// N trials over the Responses WebSocket, N/3 over the agent host, `spark acp` and `spark` in tmux,
// on each model.
// --load keeps N busy processes (default: one per core) running beside it, as a laptop doing
// other work: busy cores change the order of everything, which is where steering races hide.
import { spawn } from "node:child_process";
import os from "node:os";

const USAGE = `usage: npm run soak:steer -- [--trials N] [--seed S] [--load [N]]
  --trials N   trials over the Responses WebSocket per model (N/3 over the host, acp and tmux); default 40
  --seed S     replay the random choices of an earlier run (a failure prints its seed)
  --load [N]   keep N busy processes beside it (default: one per core)`;

const args = process.argv.slice(2);
if (args.includes("--help") || args.includes("-h")) {
  console.log(USAGE);
  process.exit(0);
}
const options = {};
for (let i = 0; i < args.length; i++) {
  const flag = args[i];
  if (!["--trials", "--seed", "--load"].includes(flag)) usageError(`unknown argument ${flag}`);
  const value = args[i + 1];
  const numeric = value !== undefined && /^-?\d+$/.test(value);
  if (numeric) i++;
  else if (flag !== "--load") usageError(`${flag} takes a number`);
  options[flag] = numeric ? value : "";
}
function usageError(message) {
  console.error(`soak-steer: ${message}\n${USAGE}`);
  process.exit(2);
}
const trials = options["--trials"] ?? process.env.STEER_SOAK_TRIALS ?? "40";
const seed = options["--seed"] ?? process.env.STEER_SOAK_SEED;
const loaded = options["--load"] !== undefined;
const busy = loaded ? Number(options["--load"] || os.availableParallelism()) : 0;

const burners = Array.from({ length: busy }, () =>
  spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }),
);
const stopBurners = () => {
  for (const burner of burners) burner.kill();
};
process.on("exit", stopBurners);
console.log(
  `steer soak: ${trials} trials per path and model, ${busy} busy processes${seed ? `, seed ${seed}` : ""}`,
);
const vitest = spawn(
  process.execPath,
  ["node_modules/vitest/vitest.mjs", "run", "src/real-model/steer-soak.test.ts"],
  {
    stdio: "inherit",
    env: {
      ...process.env,
      STEER_SOAK_TRIALS: trials,
      ...(seed ? { STEER_SOAK_SEED: seed } : {}),
      STEER_SOAK_LOAD: String(busy),
    },
  },
);
vitest.on("exit", (code, signal) => {
  stopBurners();
  process.exit(code ?? (signal ? 1 : 0));
});
