import { z } from "zod";
import { parametersOf, type Tool, ToolError } from "./tool.js";

const schema = z.object({
  task: z.string().min(1).max(4000).describe("Self-contained."),
  context: z.string().max(20_000).optional().describe("Files, findings, constraints the task leaves out."),
  agent: z.string().min(1).max(64).optional().describe("A listed agent to run it as."),
});

/**
 * Hands a longer task to a sub-agent on the deeper model. It does not wait: the sub-agent runs in
 * the background and its result arrives later as a message of its own.
 */
export const delegateTool: Tool<z.infer<typeof schema>> = {
  name: "delegate",
  description:
    "Hand a long or hard task (a multi-file change, an investigation) to a sub-agent on a stronger " +
    "model. It runs in the background; its result arrives later as a message. Returns its id at once.",
  parameters: parametersOf(schema),
  schema,
  async run(args, ctx) {
    if (!ctx.delegate) throw new ToolError("not_allowed", "No sub-agent model is configured here.");
    const id = ctx.delegate(args.task, args.context, args.agent);
    return { output: `Started sub-agent ${id}; its result will arrive when it finishes.`, isError: false };
  },
};
