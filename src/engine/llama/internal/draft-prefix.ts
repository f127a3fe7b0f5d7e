import type { ChatWrapper, LlamaModel, Token } from "node-llama-cpp";
import type { DraftRequest } from "../../engine.js";
import { renderPrompt } from "./chat-rendering.js";

/**
 * Tokens at the end of the settled text left out of a draft's prefix: they may still merge with
 * what is typed next (punctuation, a suffix). Evaluating them wrongly costs nothing but time (the
 * real request trims what differs); leaving them out costs two tokens of prefill.
 */
const UNSETTLED_TOKENS = 2;

/** Stands for whatever is typed next when finding where the rendering stops depending on it. */
const CONTINUATION = " next";

/**
 * The tokens the next request's prompt will start with while the person is still typing `text`:
 * the conversation rendered with the draft as its last user message (the same template path as a
 * real request), cut before the word being typed, a safety margin and the template's closing
 * tokens. Text that ends in white space keeps its last word.
 */
export function draftPrefix(model: LlamaModel, wrapper: ChatWrapper, request: DraftRequest): Token[] {
  const render = (text: string) =>
    renderPrompt(model, wrapper, [...request.messages, { role: "user", content: text }], request.tools)
      .tokens;
  const settled = settledText(request.text);
  const withSettled = render(settled);
  const continued = render(`${settled}${CONTINUATION}`);
  const shared = sharedLength(withSettled, continued);
  // Everything before the user's text does not depend on it, however short it is.
  const beforeText = settled === "" ? shared : sharedLength(render(""), continued);
  const length = Math.min(shared, Math.max(beforeText, shared - UNSETTLED_TOKENS));
  return withSettled.slice(0, length);
}

/** The draft without the word still being typed (and the white space before it). */
export function settledText(text: string): string {
  return text.replace(/\S+$/u, "").trimEnd();
}

function sharedLength(a: readonly Token[], b: readonly Token[]): number {
  let shared = 0;
  while (shared < a.length && shared < b.length && a[shared] === b[shared]) shared++;
  return shared;
}
