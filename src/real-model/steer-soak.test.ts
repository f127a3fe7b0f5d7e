import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { smollm2Path } from "./test-support/smollm2.js";
import {
  type Action,
  type HostThread,
  hostTrial,
  type Moment,
  openHostThread,
  responsesTrial,
  type SoakServer,
  seededRandom,
  startSoakServer,
  type Trial,
} from "./test-support/steer-soak.js";
import { type AcpTally, acpTrial, openAcpSession } from "./test-support/steer-soak-acp.js";
import { openTuiSession, tuiTrial } from "./test-support/steer-soak-tmux.js";

/**
 * Steers and cancels at random moments of real replies (`spark serve` on stories260K and SmolLM2,
 * built `dist/`), over the Responses WebSocket, the agent host, `spark acp` and `spark` in tmux,
 * checking that each is answered exactly once and every reply ends within the deadline. A few trials
 * per path here (6 over the Responses WebSocket, 2 over the agent host, whose thread first evaluates
 * the agent's prompt, and 2 each over `spark acp` and in tmux on stories260K);
 * `npm run soak:steer` runs many (STEER_SOAK_TRIALS), optionally with the cores saturated. A
 * failure prints its seed: STEER_SOAK_SEED replays it.
 */
const stories = process.env.SPARK_STORIES_MODEL ?? path.resolve("../shared/models/stories260K.gguf");
const trials = Number(process.env.STEER_SOAK_TRIALS ?? 6);
const seed = Number(process.env.STEER_SOAK_SEED ?? Math.floor(Math.random() * 2 ** 31));
const deadlineMs = Number(process.env.STEER_SOAK_DEADLINE_MS ?? 20_000);
/** `spark acp` and `spark` in tmux: 2 trials on stories260K in `npm test`; every model under the soak script. */
const soaking = process.env.STEER_SOAK_TRIALS !== undefined;
const faceTrials = soaking ? Math.max(2, Math.ceil(trials / 3)) : 2;
const tmuxFound = spawnSync("tmux", ["-V"]).status === 0;

const RESPONSE_MOMENTS: Moment[] = ["before_first_token", "mid_stream", "in_tool_call", "as_it_ends"];
const HOST_MOMENTS: Moment[] = ["before_first_token", "mid_stream"];
const ACTIONS: Action[] = ["steer", "cancel"];

/**
 * Trial `index`: steers and cancels take turns (drawn at random, a short run could hold only one of
 * them), each at a random moment.
 */
const pick = (random: () => number, moments: Moment[], index: number): Trial => ({
  action: ACTIONS[index % ACTIONS.length]!,
  moment: moments[Math.floor(random() * moments.length)]!,
});

const models = [
  { name: "stories260K", file: existsSync(stories) ? stories : undefined },
  { name: "SmolLM2", file: smollm2Path() },
];

for (const { name, file } of models) {
  describe.skipIf(!file)(`steering and cancelling ${name} at random moments`, () => {
    let serve: SoakServer;
    beforeAll(async () => {
      serve = await startSoakServer(["--model", file!, "--ctx-size", "8192"]);
    });
    afterAll(async () => {
      await serve?.stop();
    });

    const run = async (path: "responses" | "host", moments: Moment[], count: number) => {
      const random = seededRandom(seed);
      // The agent's system prompt is evaluated once, when the thread starts: minutes on busy cores.
      const thread: HostThread | undefined =
        path === "host"
          ? await openHostThread({ base: serve.base, key: null, random, deadlineMs }, 300_000)
          : undefined;
      const done: Trial[] = [];
      for (let i = 0; i < count; i++) {
        const trial = pick(random, moments, i);
        const options = { base: serve.base, key: null, random, deadlineMs };
        try {
          if (path === "responses") await responsesTrial(trial, options);
          else await hostTrial(trial, options, thread!);
        } catch (error) {
          throw new Error(
            `${name} ${path}: trial ${i + 1} of ${count} failed (STEER_SOAK_SEED=${seed}): ${(error as Error).message}\nserver log:\n${serve.log()}`,
          );
        }
        done.push(trial);
      }
      thread?.socket.close();
      expect(done).toHaveLength(count);
      const counts = ACTIONS.map((action) => `${done.filter((t) => t.action === action).length} ${action}s`);
      console.log(
        `steer soak ${name} ${path}: ${count} trials (${counts.join(", ")}), 0 failures, ${process.env.STEER_SOAK_LOAD ?? 0} busy processes, seed ${seed}`,
      );
    };

    test("over the Responses WebSocket every steer is answered once and every reply ends", async () => {
      await run("responses", RESPONSE_MOMENTS, trials);
    }, 600_000);

    test("over the agent host every turn.steer is answered once and every turn ends", async () => {
      await run("host", HOST_MOMENTS, Math.max(1, Math.ceil(trials / 3)));
    }, 600_000);

    const faces = soaking || name === "stories260K";

    test.skipIf(!faces)(
      "over spark acp every _spark/steer is answered once and every prompt ends",
      async () => {
        const random = seededRandom(seed);
        const session = await openAcpSession(serve, 300_000);
        const tally: AcpTally = { steered: 0, refused: 0, late: 0, orphanTurns: 0 };
        try {
          for (let i = 0; i < faceTrials; i++) {
            const trial = pick(random, HOST_MOMENTS, i);
            try {
              await acpTrial(trial, { random, deadlineMs }, session, tally);
            } catch (error) {
              throw new Error(
                `${name} acp: trial ${i + 1} of ${faceTrials} failed (STEER_SOAK_SEED=${seed}): ${(error as Error).message}\nspark acp said:\n${session.acp.stderr.slice(-2000)}\nserver log:\n${serve.log()}`,
              );
            }
          }
        } finally {
          await session.close();
        }
        console.log(
          `steer soak ${name} acp: ${faceTrials} trials (${tally.steered} steers taken, ${tally.refused} refused, ${tally.late} of them after the prompt ended, ${tally.orphanTurns} turns a steer started after its prompt ended), 0 failures, ${process.env.STEER_SOAK_LOAD ?? 0} busy processes, seed ${seed}`,
        );
      },
      600_000,
    );

    test.skipIf(!faces || !tmuxFound)(
      "in spark's terminal UI every steer is answered once and Esc ends the turn",
      async () => {
        const random = seededRandom(seed);
        const session = await openTuiSession(serve, `spark-steer-soak-${process.pid}-${name}`, 300_000);
        try {
          for (let i = 0; i < faceTrials; i++) {
            const trial = pick(random, HOST_MOMENTS, i);
            try {
              await tuiTrial(trial, { random, deadlineMs }, session, i + 1);
            } catch (error) {
              throw new Error(
                `${name} tmux: trial ${i + 1} of ${faceTrials} failed (STEER_SOAK_SEED=${seed}): ${(error as Error).message}\nserver log:\n${serve.log()}`,
              );
            }
          }
        } finally {
          session.close();
        }
        console.log(
          `steer soak ${name} tmux: ${faceTrials} trials, 0 failures, ${process.env.STEER_SOAK_LOAD ?? 0} busy processes, seed ${seed}`,
        );
      },
      600_000,
    );
  });
}
