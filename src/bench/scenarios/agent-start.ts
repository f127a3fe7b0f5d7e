import { AgentThread } from "../../agent/agent-thread.js";
import { discoverAgentsFiles } from "../../agent/agents-md.js";
import { buildSystemPrompt } from "../../agent/system-prompt.js";
import { Workspace } from "../../agent/workspace.js";
import { ResponsesClient } from "../../client/responses-client.js";
import type { BenchContext } from "../bench-context.js";
import { type BenchRow, row } from "../bench-report.js";
import { median } from "../internal/stats.js";

/**
 * The agent's first question: time from submitting it to its first streamed token, with the
 * session pre-warmed (system prompt and tool definitions evaluated at start, while the person
 * types) against a cold session that evaluates them with the question.
 */
export async function agentStartScenario(ctx: BenchContext): Promise<BenchRow[]> {
  const runs = ctx.quick ? 2 : 4;
  const workspace = new Workspace(process.cwd());
  const base = buildSystemPrompt(workspace.root, await discoverAgentsFiles(workspace.root));
  const warm: number[] = [];
  const cold: number[] = [];
  let prewarmMs = 0;
  await using client = await ResponsesClient.connect({ baseUrl: ctx.baseUrl });
  for (let i = 0; i < runs; i++) {
    for (const prewarm of [true, false]) {
      // A distinct prompt per session, as after a restart: nothing of it is cached yet.
      const instructions = `${base}\n\nSession ${Date.now()}-${i}-${prewarm}`;
      const thread = new AgentThread({
        client,
        workspace,
        instructions,
        model: ctx.engine.info.id,
        temperature: 0,
      });
      if (prewarm) {
        const started = performance.now();
        await thread.prewarm();
        prewarmMs = performance.now() - started;
      }
      const submitted = performance.now();
      const firstToken = new Promise<number>((resolve) => {
        const off = thread.on((event) => {
          if (event.type === "item.delta" || event.type === "turn.completed") {
            off();
            resolve(performance.now() - submitted);
          }
        });
      });
      const turn = thread.startTurn("What does this repository do? Answer in one line.");
      (prewarm ? warm : cold).push(await firstToken);
      thread.interrupt();
      await turn;
    }
    ctx.log(
      `agent-start run ${i + 1}/${runs}: pre-warmed ${warm.at(-1)!.toFixed(0)} ms, cold ${cold.at(-1)!.toFixed(0)} ms`,
    );
  }
  return [
    row(
      {
        scenario: "agent-start",
        metric: "first question -> first token: pre-warmed session vs cold",
        value: median(warm),
        baseline: median(cold),
        unit: "ms",
        target: "<= 0.5x",
        detail: `pre-warm itself took ${prewarmMs.toFixed(0)} ms at start; median of ${runs}`,
      },
      (ratio) => ratio <= 0.5,
    ),
  ];
}
