import type { ResponsesClient } from "../../client/responses-client.js";
import type { HostReview, HostReviewOptions } from "../../host/host-thread-source.js";
import type { ReviewTarget, ThreadEvent } from "../../protocol/agent.js";
import { collectDiff, describeTarget, fitDiffToContext } from "./review-diff.js";
import { runReview } from "./review-thread.js";

/** The model a session's review runs on: the session's own, on a lane of the runtime's connection. */
export interface SessionReviewModel {
  client: ResponsesClient;
  model: string;
  contextBudget: number;
}

/**
 * `thread.review` (`/review` in every face): reviews `target` in `root`, the session's workspace
 * (its worktree, for a worktree session), read-only, with the same thread options as `spark
 * review`. The review runs on a lane of the connection, beside the session's turns, not behind them.
 */
export async function reviewSession(
  root: string,
  target: ReviewTarget,
  model: SessionReviewModel,
  options: HostReviewOptions,
): Promise<HostReview> {
  const diff = await collectDiff(root, target);
  const described = describeTarget(target);
  if (diff.files.length === 0)
    return {
      version: 1,
      target: described,
      findings: [],
      dropped: 0,
      truncated: false,
      notes: [`Nothing to review: no changed lines in ${described}.`],
    };
  const fitted = fitDiffToContext(diff, model.contextBudget);
  const count = `${fitted.files.length} file${fitted.files.length === 1 ? "" : "s"}`;
  options.onProgress(`Reviewing ${count} (${described}) on ${model.model || "the server's model"}`);
  const lane = model.client.lane();
  let result: Awaited<ReturnType<typeof runReview>>;
  try {
    result = await runReview(
      fitted,
      { ...model, client: lane },
      { signal: options.signal, onEvent: (event) => progressOf(event, options.onProgress) },
    );
  } finally {
    await lane.close();
  }
  const { droppedReasons, ...report } = result;
  const notes = droppedReasons.map((dropped) => `Dropped a finding: ${dropped.reason}`);
  if (fitted.truncated)
    notes.push("The diff was longer than the model's context allows; only its start was reviewed.");
  return { ...report, notes };
}

/** A tool call of the review thread, said as it starts (`read_file src/sum.ts`). */
function progressOf(event: ThreadEvent, say: (message: string) => void): void {
  if (event.type !== "item.completed" || event.item.type !== "tool_call") return;
  say(`${event.item.name} ${argumentsSummary(event.item.arguments)}`.trimEnd());
}

/** The path or query a read-only tool call names, short. */
function argumentsSummary(json: string): string {
  try {
    const args = JSON.parse(json) as Record<string, unknown>;
    const named = args.path ?? args.pattern ?? args.query;
    return typeof named === "string" ? named.slice(0, 120) : "";
  } catch {
    return "";
  }
}
