import type { AgentThread } from "../agent/agent-thread.js";
import type { HostThreadEvent, ThreadEvent } from "../protocol/agent.js";
import type { HostRequest } from "../protocol/agent-requests.js";
import { SparkError } from "../protocol/errors.js";

/** The requests that act on one live thread, and nothing else of the host. */
export type ThreadRequest = Extract<
  HostRequest,
  {
    type:
      | "turn.start"
      | "thread.set_mode"
      | "turn.steer"
      | "turn.queue"
      | "turn.interrupt"
      | "turn.draft"
      | "approval.respond"
      | "subagent.cancel"
      | "thread.undo"
      | "thread.rewind"
      | "thread.compact"
      | "patch.accept"
      | "patch.reject"
      | "thread.set_model";
  }
>;

export interface ThreadRequestContext {
  /** Stamps an event and sends it to the thread's subscribers. */
  publish: (event: ThreadEvent | HostThreadEvent) => void;
  /**
   * Answers the request at once (its `ack`, with these fields), before anything else the thread
   * emits: `turn.start`'s ack follows its `turn.started` directly. The host acks the other requests
   * once they are done.
   */
  acknowledge: (fields: { turn_id: string }) => void;
  /** The models (tiers) a thread may switch to (asked only by `thread.set_model`). */
  models: () => readonly string[];
}

/**
 * Carries out one request on a live thread; a refusal throws a SparkError (answered as an `error`
 * naming the request). Events the thread emits itself reach subscribers through the host's
 * listener; the ones that answer a request here are published through `context`.
 */
export async function handleThreadRequest(
  thread: AgentThread,
  request: ThreadRequest,
  context: ThreadRequestContext,
): Promise<void> {
  switch (request.type) {
    case "turn.start":
      if (thread.busy)
        throw new SparkError("response_in_progress", "A turn is running; steer it, queue, or interrupt it.");
      void thread.startTurn(request.input, {
        toolChoice: request.tool_choice,
        mode: request.mode,
        outputSchema: request.output_schema,
      });
      // `turn.started` went out synchronously: the ack names the turn before its next event.
      context.acknowledge({ turn_id: thread.turnId! });
      return;
    case "thread.set_mode":
      thread.setMode(request.mode);
      return;
    case "turn.steer":
      thread.steer(request.input);
      return;
    case "turn.queue":
      context.acknowledge({ turn_id: thread.enqueue(request.input) });
      return;
    case "turn.interrupt":
      thread.interrupt();
      return;
    case "turn.draft":
      // A hint: how the server used it changes nothing the face shows.
      void thread.draft(request.input);
      return;
    case "approval.respond":
      if (!thread.respondToApproval(request.approval_id, request.approved))
        throw new SparkError(
          "not_found",
          `No pending approval ${request.approval_id} (answered, or its turn ended).`,
          { param: "approval_id" },
        );
      return;
    case "subagent.cancel":
      if (!thread.cancelSubAgent(request.subagent_id))
        throw new SparkError("not_found", `No running sub-agent ${request.subagent_id}.`, {
          param: "subagent_id",
        });
      return;
    case "thread.undo": {
      const undone = await thread.undoPatch();
      if (!undone) throw new SparkError("not_found", "Nothing to undo.");
      context.publish({ type: "patch.undone", item_id: undone.itemId, paths: undone.paths });
      return;
    }
    case "thread.rewind": // the thread announces it to every subscriber (`thread.rewound`)
      await thread.rewind(request.item_id, request.restore);
      return;
    case "thread.compact": // the thread tells every subscriber (a notice item, `context.updated`)
      await thread.compact(request.focus);
      return;
    case "patch.accept":
    case "patch.reject": {
      const resolution = request.type === "patch.accept" ? "accepted" : "rejected";
      await thread.resolvePatchFile(request.item_id, request.path, resolution);
      context.publish({ type: "patch.resolved", item_id: request.item_id, path: request.path, resolution });
      return;
    }
    case "thread.set_model": {
      const models = context.models();
      if (!models.includes(request.model)) {
        const known = models.length > 0 ? ` Available: ${models.join(", ")}.` : " This host has no others.";
        throw new SparkError("invalid_request", `Unknown model '${request.model}'.${known}`, {
          param: "model",
        });
      }
      if (thread.busy)
        throw new SparkError("response_in_progress", "A turn is running; switch models between turns.", {
          param: "thread_id",
        });
      thread.setModel(request.model);
      context.publish({ type: "thread.renamed", thread: { ...thread.info } });
      return;
    }
    default: {
      const unreachable: never = request;
      throw new Error(`Unhandled ${JSON.stringify(unreachable)}`);
    }
  }
}
