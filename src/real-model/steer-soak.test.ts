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

/**
 * Steers and cancels at random moments of real replies (`spark serve` on stories260K and SmolLM2,
 * built `dist/`), over the Responses WebSocket and the agent host, checking that each is answered
 * exactly once and every reply ends within the deadline. A few trials per path here (6 over the
 * Responses WebSocket, 2 over the agent host, whose thread first evaluates the agent's prompt);
 * `npm run soak:steer` runs many (STEER_SOAK_TRIALS), optionally with the cores saturated. A
 * failure prints its seed: STEER_SOAK_SEED replays it.
 */
const stories = process.env.SPARK_STORIES_MODEL ?? path.resolve("../shared/models/stories260K.gguf");
const trials = Number(process.env.STEER_SOAK_TRIALS ?? 6);
const seed = Number(process.env.STEER_SOAK_SEED ?? Math.floor(Math.random() * 2 ** 31));
const deadlineMs = Number(process.env.STEER_SOAK_DEADLINE_MS ?? 20_000);

const RESPONSE_MOMENTS: Moment[] = ["before_first_token", "mid_stream", "in_tool_call", "as_it_ends"];
const HOST_MOMENTS: Moment[] = ["before_first_token", "mid_stream"];
const ACTIONS: Action[] = ["steer", "cancel"];

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
        const trial = {
          action: ACTIONS[Math.floor(random() * 2)]!,
          moment: moments[Math.floor(random() * moments.length)]!,
        };
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
  });
}
