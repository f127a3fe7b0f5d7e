import { AgentThread } from "../../agent/agent-thread.js";
import { defaultMaxOutputTokens } from "../../agent/request-settings.js";
import { toolsFor } from "../../agent/tools/index.js";
import { Workspace } from "../../agent/workspace.js";
import type { ResponsesClient } from "../../client/responses-client.js";
import type { ThreadEvent } from "../../protocol/agent.js";
import { SparkError } from "../../protocol/errors.js";
import { describeTarget, type ReviewDiff } from "./review-diff.js";
import {
  checkFindings,
  type DroppedFinding,
  REVIEW_ANSWER_SCHEMA,
  type ReviewReport,
  UnreadableAnswerError,
} from "./review-findings.js";

/**
 * The only tools a review thread lists: Spark's own that change nothing (read_file, list_dir,
 * search). No apply_patch, no shell, no MCP tool, no sub-agent: the thread is built without them,
 * so a call of one is an unknown tool, whatever the model or the diff says.
 */
export const REVIEW_TOOLS: readonly string[] = toolsFor()
  .filter((tool) => tool.readOnly === true)
  .map((tool) => tool.name);

/**
 * Output tokens of one review response, at most (a small context's share is less). A small model
 * can spin a string out to its schema's length: on a CPU 2048 tokens took minutes; an answer cut
 * here keeps the findings it finished.
 */
const REVIEW_OUTPUT_TOKENS = 1024;

/** Model responses with tool calls one review may run before it must answer. */
const REVIEW_TOOL_ROUNDS = 6;

const READ_LINE =
  "You may read files (read_file, list_dir, search) to understand the change; you cannot edit files or run commands.";

export const REVIEW_INSTRUCTIONS = `You are Spark, reviewing a change to a git repository. Find real defects the change introduces: wrong logic, off-by-one errors, unhandled errors, security problems, broken contracts. Do not report style or praise.
${READ_LINE}
Answer with JSON only: {"findings": [...]}, each finding {"file", "start_line", "end_line", "severity", "title", "explanation"}.
file is the path as written in the diff after "+++ b/". start_line and end_line are line numbers of the new file, on lines the diff shows (added or context lines of a hunk). severity is "error" for a bug, "warning" for a likely problem, "note" for a minor one. title is one short line; explanation says why it is wrong and how to fix it.
If the change has no defects, answer {"findings": []}.`;

/** What the review thread is made of, beside its client: read-only tools, the answer's schema. */
export function reviewThreadOptions(options: {
  client: ResponsesClient;
  root: string;
  model: string;
  contextBudget: number;
}) {
  return {
    client: options.client,
    workspace: new Workspace(options.root),
    instructions: REVIEW_INSTRUCTIONS,
    model: options.model,
    contextBudget: options.contextBudget,
    allowedTools: REVIEW_TOOLS,
    maxToolRounds: REVIEW_TOOL_ROUNDS,
    maxOutputTokens: Math.min(REVIEW_OUTPUT_TOKENS, defaultMaxOutputTokens(options.contextBudget)),
    textFormat: {
      type: "json_schema" as const,
      name: "review_findings",
      schema: REVIEW_ANSWER_SCHEMA as unknown as Record<string, unknown>,
      strict: true,
    },
  };
}

/** The user message of a review: what is reviewed, and the diff. */
export function reviewMessage(diff: ReviewDiff): string {
  const files = diff.files.map((file) => `- ${file.path}`).join("\n");
  const cut = diff.truncated ? "\n(The diff is longer than shown; review what is shown.)" : "";
  return `Review ${describeTarget(diff.target)}. Files changed:\n${files}\n\nThe diff:\n\`\`\`diff\n${diff.text}\`\`\`${cut}`;
}

export interface ReviewRunOptions {
  /** Every event of the review thread (tool calls, the answer as it streams), for progress. */
  onEvent?: (event: ThreadEvent) => void;
  signal?: AbortSignal;
  /**
   * `false`: the model sees the diff alone, in one request with no tools (`spark review
   * --diff-only`): half the work where a small model would read until its rounds run out. Default: true.
   */
  readFiles?: boolean;
}

/**
 * Reviews `diff` in a new read-only thread on `client`'s model and checks each finding against
 * the diff. Throws when the turn fails or the answer cannot be read as findings.
 */
export async function runReview(
  diff: ReviewDiff,
  model: { client: ResponsesClient; model: string; contextBudget: number },
  options: ReviewRunOptions = {},
): Promise<ReviewReport & { droppedReasons: DroppedFinding[] }> {
  const answer =
    options.readFiles === false
      ? await answerUnderSchema(diff, "", model, options.signal)
      : await threadAnswer(diff, model, options);
  let checked: ReturnType<typeof checkFindings>;
  try {
    checked = checkFindings(answer.text, diff.files);
  } catch (error) {
    if (!(error instanceof UnreadableAnswerError) || !answer.tools) throw error;
    // An engine ignored the schema beside the tools (the embedded one does not), or a
    // limit stopped it: the findings are asked for once more, with no tools, under the schema alone.
    checked = checkFindings(
      (await answerUnderSchema(diff, answer.text, model, options.signal)).text,
      diff.files,
    );
  }
  const { findings, dropped } = checked;
  return {
    version: 1,
    target: describeTarget(diff.target),
    findings,
    dropped: dropped.length,
    truncated: diff.truncated,
    droppedReasons: dropped,
  };
}

/** The answer of a review thread's one turn (read-only tools offered). */
async function threadAnswer(
  diff: ReviewDiff,
  model: { client: ResponsesClient; model: string; contextBudget: number },
  options: ReviewRunOptions,
): Promise<{ text: string; tools: boolean }> {
  const thread = new AgentThread(reviewThreadOptions({ ...model, root: diff.root }));
  let ended: Extract<ThreadEvent, { type: "turn.completed" }> | undefined;
  let answer = "";
  const off = thread.on((event) => {
    options.onEvent?.(event);
    if (event.type === "item.completed" && event.item.type === "agent_message") answer = event.item.text;
    if (event.type === "turn.completed") ended = event;
  });
  const abort = () => thread.interrupt();
  options.signal?.addEventListener("abort", abort, { once: true });
  try {
    await thread.startTurn(reviewMessage(diff));
  } finally {
    off();
    options.signal?.removeEventListener("abort", abort);
  }
  // A limit that stopped the model (it repeated itself, ran out of tokens or tool rounds) still
  // leaves a review to ask for; an interrupt or an error does not.
  const limited = ended?.status === "failed" && ended.error?.code === "limit_reached";
  if (ended?.status !== "completed" && !limited) {
    const why = ended?.error?.message ?? ended?.reason ?? ended?.status ?? "it did not end";
    throw new SparkError("server_error", `The review did not complete: ${why}.`);
  }
  return { text: answer, tools: true };
}

/** Characters of the first answer passed on to {@link answerUnderSchema} as notes. */
const NOTES_CHARS = 2000;

/**
 * One request with no tools, under the findings schema: the diff and what the model said the first
 * time, to be written as findings. Returns the answer's text.
 */
async function answerUnderSchema(
  diff: ReviewDiff,
  notes: string,
  model: { client: ResponsesClient; model: string; contextBudget: number },
  signal: AbortSignal | undefined,
): Promise<{ text: string; tools: boolean }> {
  const said = notes.trim() ? `\n\nYour notes from reading it:\n${notes.trim().slice(0, NOTES_CHARS)}` : "";
  const { textFormat, maxOutputTokens } = reviewThreadOptions({ ...model, root: diff.root });
  const stream = model.client.create(
    {
      model: model.model,
      instructions: REVIEW_INSTRUCTIONS.replace(READ_LINE, "Review from the diff shown; there are no tools."),
      input: `${reviewMessage(diff)}${said}\n\nNow answer with the findings as JSON.`,
      text: { format: textFormat },
      max_output_tokens: maxOutputTokens,
      store: false,
    },
    signal ? { signal } : {},
  );
  let text = "";
  for await (const event of stream) if (event.type === "response.output_text.delta") text += event.delta;
  // A failed response rejects here; one cut short leaves JSON that does not parse, said as such.
  await stream.final;
  return { text, tools: false };
}
