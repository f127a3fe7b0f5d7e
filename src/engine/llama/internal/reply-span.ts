import type { ChatWrapper, LlamaModel, Token } from "node-llama-cpp";
import type { ChatMessage, ToolCall } from "../../../protocol/chat.js";
import type { GenerateRequest } from "../../engine.js";
import { renderPrompt } from "./chat-rendering.js";
import type { GeneratedSpan } from "./sequence-pool.js";

/** A finished reply, as the generation left it. */
export interface FinishedReply {
  generated: Token[];
  /** The answer text emitted. */
  text: string;
  calls: ToolCall[];
  reasoned: boolean;
  /** A stop sequence (or the template's end of turn as text) ended it: cut out of the text. */
  stoppedByTrigger: boolean;
}

/**
 * What to remember of a reply, so the next prompt that contains its text reuses its KV state: only
 * when every generated token is in the text (no stop trigger or reasoning was cut out of it).
 */
export function replySpan(
  model: LlamaModel,
  chatWrapper: ChatWrapper,
  request: GenerateRequest,
  prompt: Token[],
  reply: FinishedReply,
): GeneratedSpan | undefined {
  const { generated, text, calls, reasoned } = reply;
  if (calls.length === 0 && !reasoned && !reply.stoppedByTrigger && text) {
    return { start: prompt.length, generated, rendered: model.tokenize(text, false) };
  }
  if (calls.length > 0 && !reasoned) {
    const rendered = renderedReply(model, chatWrapper, request, prompt, generated, { content: text, calls });
    if (rendered) return { start: prompt.length, generated, rendered };
  }
  return undefined;
}

/**
 * The tokens the chat template renders a reply with calls as, in the next prompt, when that is
 * exactly the text the model generated (the call grammar writes arguments in the templates' JSON
 * layout): the reply's KV state is then reused rather than evaluated again.
 */
function renderedReply(
  model: LlamaModel,
  chatWrapper: ChatWrapper,
  request: GenerateRequest,
  prompt: Token[],
  generated: Token[],
  reply: { content: string; calls: ToolCall[] },
): Token[] | undefined {
  const answered: ChatMessage[] = [
    ...request.messages,
    { role: "assistant", content: reply.content, toolCalls: reply.calls },
    ...reply.calls.map(
      (call): ChatMessage => ({ role: "tool", callId: call.callId, name: call.name, content: "" }),
    ),
  ];
  const next = renderPrompt(model, chatWrapper, answered, request.tools).tokens;
  if (next.length < prompt.length || prompt.some((token, i) => token !== next[i])) return undefined;
  const text = model.detokenize(generated, true);
  const renderedUpTo = (end: number) => model.detokenize(next.slice(prompt.length, end), true);
  // The shortest rendering at least as long as the reply (text grows with the tokens).
  let low = prompt.length + 1;
  let high = next.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (renderedUpTo(middle).length < text.length) low = middle + 1;
    else high = middle;
  }
  return renderedUpTo(low) === text ? next.slice(prompt.length, low) : undefined;
}
