import path from "node:path";
import { defaultAgentPrompt, measureAgentPrompt } from "../agent-prompt-size.js";
import type { BenchContext } from "../bench-context.js";
import { type BenchRow, row } from "../bench-report.js";
import { AGENT_PROMPT_BEFORE } from "../internal/agent-prompt-before.js";

/**
 * The agent's prompt (instructions and tools, as a session without AGENTS.md, skills, agents or
 * MCP servers sends it) in each model's tokens, against the prompt before it was made lean: what a
 * new session evaluates before its first answer. On the bench's synthetic model (Qwen2.5's
 * template) and on SmolLM2-135M-Instruct once fetched. Counting needs only the vocabulary.
 */
export async function agentPromptScenario(
  ctx: Pick<BenchContext, "modelPath" | "chatModelPath" | "log">,
): Promise<BenchRow[]> {
  const models = [ctx.modelPath, ...(ctx.chatModelPath ? [ctx.chatModelPath] : [])];
  const rows: BenchRow[] = [];
  for (const model of models) {
    const now = await measureAgentPrompt(model, defaultAgentPrompt());
    const before = await measureAgentPrompt(model, AGENT_PROMPT_BEFORE);
    ctx.log(`agent-prompt ${path.basename(model)}: ${now.total} tokens, before ${before.total}`);
    rows.push(
      row(
        {
          scenario: "agent-prompt",
          metric: `agent prompt tokens on ${now.model}: now vs before the lean prompt`,
          value: now.total,
          baseline: before.total,
          unit: "tokens",
          target: "<= 0.6x",
          detail: `system ${now.system}, tools ${now.tools} (before: system ${before.system}, tools ${before.tools})`,
        },
        (ratio) => ratio <= 0.6,
      ),
    );
  }
  return rows;
}
