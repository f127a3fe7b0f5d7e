#!/usr/bin/env node
// The steering soak (src/real-model/steer-soak.test.ts) with many trials:
//   npm run soak:steer -- [--trials N] [--seed S] [--load [N]]
// N trials over the Responses WebSocket, N/3 over the agent host, `spark acp` and `spark` in tmux,
// on each model.
// --load keeps N busy processes (default: one per core) running beside it, as a laptop doing
// other work: busy cores change the order of everything, which is where steering races hide.
import { spawn } from "node:child_process";
import os from "node:os";

const args = process.argv.slice(2);
const flagValue = (flag) => {
  const at = args.indexOf(flag);
  const value = at === -1 ? undefined : args[at + 1];
  return value !== undefined && /^\d+$/.test(value) ? value : undefined;
};
const trials = flagValue("--trials") ?? process.env.STEER_SOAK_TRIALS ?? "40";
const seed = flagValue("--seed") ?? process.env.STEER_SOAK_SEED;
const loaded = args.includes("--load");
const busy = loaded ? Number(flagValue("--load") ?? os.availableParallelism()) : 0;

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
