import path from "node:path";
import { getLlama, LlamaLogLevel, resolveChatWrapper } from "node-llama-cpp";
import { buildSystemPrompt } from "../agent/system-prompt.js";
import { toolsFor } from "../agent/tools/index.js";
import { renderPrompt } from "../engine/llama/internal/chat-rendering.js";
import { withSparkCallSyntax } from "../engine/llama/internal/tool-call-syntax.js";
import type { ToolDefinition } from "../protocol/chat.js";

/** The prefix every agent request repeats: the instructions and the tool list. */
export interface AgentPrompt {
  instructions: string;
  tools: readonly ToolDefinition[];
}

/** An agent prompt in one model's tokens, as its chat template renders it. */
export interface AgentPromptSize {
  /** The model file's name. */
  model: string;
  /** The system turn with the tool list, as the engine renders it before the first user message. */
  total: number;
  /** The system turn alone (instructions and the template's framing). */
  system: number;
  /** What the tool list adds to it. */
  tools: number;
}

/** Where the default prompt says the workspace is, so its size does not depend on the machine. */
export const SAMPLE_WORKSPACE = "/home/user/project";

/**
 * The agent's prompt as a session without AGENTS.md, skills, agents or MCP servers sends it: the
 * prompt every new session starts with, and what `spark doctor` and the bench measure.
 */
export function defaultAgentPrompt(workspaceRoot: string = SAMPLE_WORKSPACE): AgentPrompt {
  return {
    instructions: buildSystemPrompt(workspaceRoot, []),
    tools: toolsFor().map(({ name, description, parameters }) => ({ name, description, parameters })),
  };
}

/**
 * Counts `prompt` in the tokens of the model at `modelPath`, rendered by the model's own chat
 * template as the engine renders it (Spark's call syntax where the template has none). Loads only
 * the vocabulary, not the weights.
 */
export async function measureAgentPrompt(modelPath: string, prompt: AgentPrompt): Promise<AgentPromptSize> {
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
  try {
    const model = await llama.loadModel({ modelPath, vocabOnly: true });
    const wrapper = withSparkCallSyntax(resolveChatWrapper(model));
    const system = [{ role: "system" as const, content: prompt.instructions }];
    const total = renderPrompt(model, wrapper, system, prompt.tools).tokens.length;
    const alone = renderPrompt(model, wrapper, system, undefined).tokens.length;
    return { model: path.basename(modelPath), total, system: alone, tools: total - alone };
  } finally {
    await llama.dispose();
  }
}

/** `agent prompt: 1,234 tokens (system 800, tools 434) on model.gguf`, as `spark doctor` prints it. */
export function formatAgentPromptSize(size: AgentPromptSize): string {
  const n = (count: number) => count.toLocaleString("en-US");
  return `agent prompt: ${n(size.total)} tokens (system ${n(size.system)}, tools ${n(size.tools)}) on ${size.model}`;
}
