import type { Tool } from "./tools/tool.js";

export interface RequestSettingsOptions {
  /** Model id; "" is the server's default. */
  model: string;
  instructions: string;
  tools: readonly Tool[];
  /** Default: the server's. */
  temperature?: number | undefined;
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
  };
}
