import type { LlamaModel } from "node-llama-cpp";

/** Most tokens llama.cpp lets a draft vocabulary differ by (SPEC_VOCAB_MAX_SIZE_DIFFERENCE). */
const VOCAB_MAX_SIZE_DIFFERENCE = 128;
/** Token ids from which llama.cpp compares the texts (SPEC_VOCAB_CHECK_START_TOKEN_ID). */
const VOCAB_CHECK_START_ID = 5;

/**
 * Why `draft` cannot draft for `main`, or undefined when it can: llama.cpp's own rules for a draft
 * model (node-llama-cpp checks them only once drafting starts, mid-request), plus no token ids the
 * main model does not have. Same vocabulary type and BOS/EOS; sizes may differ by a little padding
 * (Qwen2.5's 0.5B and 7B GGUFs have 151,936 and 152,064 tokens); every shared id has the same text.
 */
export function vocabularyMismatch(main: LlamaModel, draft: LlamaModel): string | undefined {
  if (main.vocabularyType !== draft.vocabularyType)
    return `vocabulary type ${draft.vocabularyType}, not ${main.vocabularyType}`;
  const a = main.tokens;
  const b = draft.tokens;
  if (a.bos !== b.bos || a.eos !== b.eos) return `BOS/EOS tokens ${b.bos}/${b.eos}, not ${a.bos}/${a.eos}`;
  if (
    a.shouldPrependBosToken !== b.shouldPrependBosToken ||
    a.shouldAppendEosToken !== b.shouldAppendEosToken
  )
    return "a different BOS/EOS policy";
  const mainTexts = main.fileInfo.metadata.tokenizer?.ggml?.tokens ?? [];
  const draftTexts = draft.fileInfo.metadata.tokenizer?.ggml?.tokens ?? [];
  if (mainTexts.length === 0 || draftTexts.length === 0) return "no vocabulary in the file";
  if (
    draftTexts.length > mainTexts.length ||
    mainTexts.length - draftTexts.length > VOCAB_MAX_SIZE_DIFFERENCE
  )
    return `${draftTexts.length} tokens, not ${mainTexts.length}`;
  for (let id = VOCAB_CHECK_START_ID; id < draftTexts.length; id++) {
    if (mainTexts[id] !== draftTexts[id])
      return `token ${id} is ${JSON.stringify(draftTexts[id])}, not ${JSON.stringify(mainTexts[id])}`;
  }
  return undefined;
}
