import type { TextFormat } from "../protocol/output-format.js";
import type { Tool } from "./tools/tool.js";

export interface RequestSettingsOptions {
  /** Model id; "" is the server's default. */
  model: string;
  instructions: string;
  tools: readonly Tool[];
  /** Default: the server's. */
  temperature?: number | undefined;
  /** Output tokens one response may write (see defaultMaxOutputTokens). Default: the server's (none). */
  maxOutputTokens?: number | undefined;
  /** Structured output (`text.format`). Default: text. */
  textFormat?: TextFormat | undefined;
}

/** The share of the context one response may fill by default, and the most it may write. */
const OUTPUT_SHARE = 1 / 4;
const OUTPUT_CAP = 16_384;
const OUTPUT_FLOOR = 256;

/**
 * The output cap of one response on a model with `contextTokens` of context: a quarter of it, at
 * most 16384 and at least 256, so a small model cannot fill its context by rambling (SmolLM2 with
 * 8192 tokens: 2048) while a large one can still write a long file (README → Limits).
 */
export function defaultMaxOutputTokens(contextTokens: number): number {
  return Math.max(OUTPUT_FLOOR, Math.min(OUTPUT_CAP, Math.floor(contextTokens * OUTPUT_SHARE)));
}

/**
 * What every request of a thread repeats: byte-identical from turn to turn, so the server's cached
 * prefix (instructions, then tools) stays valid. Only `/model` (a new chain on another model)
 * changes it.
 */
export function requestSettings(options: RequestSettingsOptions) {
  return {
    model: options.model,
    instructions: options.instructions,
    tools: options.tools.map((tool) => ({
      type: "function" as const,
      name: tool.name,
      description: tool.description,
      parameters: tool.parameters,
      strict: false,
    })),
    store: true,
    ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
    ...(options.maxOutputTokens === undefined ? {} : { max_output_tokens: options.maxOutputTokens }),
    ...(options.textFormat === undefined ? {} : { text: { format: options.textFormat } }),
  };
}
