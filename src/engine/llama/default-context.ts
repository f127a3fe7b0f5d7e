/** The default context's bounds, in tokens per conversation. */
const LEAST = 4096;
const MOST = 32768;

/**
 * Tokens per conversation when none is set: the model's training context, at least 4096 and at
 * most 32768. Below 4096 the agent's prompt and tools alone can fill the context (2,625 tokens in
 * stories260K's 512-token vocabulary, whose training context is 2,048), so not one message would
 * fit; a toy model answers past its training context, if worse. With the local build on Linux the
 * KV cache is resident as it is written (patches/llama.cpp), so a context not used costs no memory.
 * No imports: the commands' `--help` reads {@link DEFAULT_CONTEXT_HELP} without loading the engine.
 */
export function defaultContextSize(trained: number): number {
  return Math.min(Math.max(trained, LEAST), MOST);
}

/** The default, in the words of each `--ctx-size` option's help. */
export const DEFAULT_CONTEXT_HELP = `default: the model's, at least ${LEAST} and at most ${MOST}`;
