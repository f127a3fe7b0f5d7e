import type { LlamaContextSequence } from "node-llama-cpp";

/** node-llama-cpp's internal copy (`llama_memory_seq_cp`), present in the prebuilt and local builds. */
interface CopyingSequence {
  _copyStateFromOtherSequence(other: LlamaContextSequence, upToTokenIndex: number): Promise<boolean>;
}

/**
 * Makes `target` hold the first `length` tokens of `source`, with their KV cells copied rather than
 * evaluated; `source` is left as it was. The copy replaces whatever `target` held. When the library
 * cannot copy (the source holds cells past its tokens, e.g. loaded draft predictions), `target` is
 * emptied instead, and the prompt is evaluated as for a new conversation. Returns the tokens held.
 */
export async function copySequencePrefix(
  target: LlamaContextSequence,
  source: LlamaContextSequence,
  length: number,
): Promise<number> {
  const copied = await (target as unknown as CopyingSequence)._copyStateFromOtherSequence(source, length);
  if (copied) return length;
  await target.clearHistory();
  return 0;
}
