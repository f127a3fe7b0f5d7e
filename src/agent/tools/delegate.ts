import { z } from "zod";
import { parametersOf, type Tool, ToolError } from "./tool.js";

const schema = z.object({
  task: z.string().min(1).max(4000).describe("What the sub-agent should do, self-contained."),
  context: z
    .string()
    .max(20_000)
    .optional()
    .describe("What it needs to know that the task does not say: files, findings, constraints."),
  agent: z
    .string()
    .min(1)
    .max(64)
    .optional()
    .describe("Run it as this defined agent (one of the agents the instructions list). Default: none."),
});

/**
 * Hands a longer task to a sub-agent on the deeper model. It does not wait: the sub-agent runs in
 * the background and its result arrives later as a message of its own.
 */
export const delegateTool: Tool<z.infer<typeof schema>> = {
  name: "delegate",
  description:
    "Hand a longer or harder task (a multi-file change, an investigation) to a sub-agent on a " +
    "stronger model. It works in the background in the same workspace; you get its result later " +
    "as a new message. Returns at once with the sub-agent's id; do not wait for it. Name an `agent` " +
    "when one of the defined agents fits the task.",
  parameters: parametersOf(schema),
  schema,
  async run(args, ctx) {
    if (!ctx.delegate) throw new ToolError("not_allowed", "No sub-agent model is configured here.");
    const id = ctx.delegate(args.task, args.context, args.agent);
    return { output: `Started sub-agent ${id}; its result will arrive when it finishes.`, isError: false };
  },
};
