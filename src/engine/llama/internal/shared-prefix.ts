import type { ChatWrapper, LlamaModel, Token } from "node-llama-cpp";
import type { GenerateRequest } from "../../engine.js";
import { type RenderedPrompt, renderPrompt } from "./chat-rendering.js";

/**
 * A pre-warm (`prefillOnly`) evaluates what every next turn shares: the conversation up to where a
 * following user message would start, not the open assistant turn the template ends with (the
 * next request would erase that again, and an erase waits for the other streams' batch).
 */
export function renderSharedPrefix(
  model: LlamaModel,
  chatWrapper: ChatWrapper,
  request: GenerateRequest,
): RenderedPrompt {
  const rendered = renderPrompt(model, chatWrapper, request.messages, request.tools);
  const next = renderPrompt(
    model,
    chatWrapper,
    [...request.messages, { role: "user", content: "." }],
    request.tools,
  );
  let shared = 0;
  while (shared < rendered.tokens.length && rendered.tokens[shared] === next.tokens[shared]) shared++;
  return { ...rendered, tokens: rendered.tokens.slice(0, shared) };
}

/**
 * The prefix whose KV state is worth saving, when it ends between `after` and `upTo`: a pre-warm's
 * whole prompt, else the leading system messages and tools (what every new conversation of the
 * same client repeats).
 */
export function prefixToSave(
  model: LlamaModel,
  chatWrapper: ChatWrapper,
  request: GenerateRequest,
  tokens: Token[],
  { after, upTo }: { after: number; upTo: number },
): number | undefined {
  let end = tokens.length;
  if (!request.prefillOnly) {
    const leading = request.messages.findIndex((message) => message.role !== "system");
    if (leading === 0) return undefined;
    const system = leading === -1 ? request.messages : request.messages.slice(0, leading);
    const prefix = renderSharedPrefix(model, chatWrapper, { ...request, messages: system }).tokens;
    if (prefix.some((token, i) => token !== tokens[i])) return undefined;
    end = prefix.length;
  }
  return end > after && end <= upTo ? end : undefined;
}
