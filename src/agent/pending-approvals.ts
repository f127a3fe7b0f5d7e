import { randomUUID } from "node:crypto";
import type { ApprovalRequestEvent, ThreadEvent } from "../protocol/agent.js";
import { type ApprovalPolicy, approvalFor } from "./approval.js";
import type { ApprovalRequest } from "./tools/tool.js";

interface Waiting {
  turnId: string;
  callId: string | undefined;
  resolve: (approved: boolean) => void;
}

/**
 * A thread's approval requests waiting for the person's answer, each announced as an event naming
 * its turn and the tool call that asks (`call_id`), so faces never have to guess them.
 */
export class PendingApprovals {
  private readonly waiting = new Map<string, Waiting>();

  constructor(
    private readonly options: {
      /** Default: "ask". */
      policy?: ApprovalPolicy | undefined;
      emit: (event: ThreadEvent) => void;
      /** The tool call of `turnId` running now (ItemLog.runningCall): the one asking. */
      runningCall: (turnId: string) => string | undefined;
    },
  ) {}

  /**
   * Resolves with the decision: at once under the policy, else once the person answers. Denied at
   * once, unannounced, when `signal` (the turn's) is aborted: a tool still winding down after an
   * interrupt never asks about a turn that has ended.
   */
  request(turnId: string, request: ApprovalRequest, signal?: AbortSignal): Promise<boolean> {
    if (signal?.aborted) return Promise.resolve(false);
    const decision = approvalFor(request, this.options.policy ?? "ask");
    if (decision !== "ask-user") return Promise.resolve(decision === "auto-approve");
    const approvalId = `appr_${randomUUID().slice(0, 8)}`;
    const callId = this.options.runningCall(turnId);
    return new Promise((resolve) => {
      this.waiting.set(approvalId, { turnId, callId, resolve });
      this.options.emit({
        type: "approval.requested",
        turn_id: turnId,
        ...(callId === undefined ? {} : { call_id: callId }),
        approval_id: approvalId,
        ...onTheWire(request),
      });
    });
  }

  /** Answers a waiting request; false when none by that id waits (answered, or denied by an interrupt). */
  respond(approvalId: string, approved: boolean): boolean {
    const waiting = this.waiting.get(approvalId);
    if (!waiting) return false;
    this.waiting.delete(approvalId);
    this.options.emit({
      type: "approval.resolved",
      approval_id: approvalId,
      approved,
      turn_id: waiting.turnId,
      ...(waiting.callId === undefined ? {} : { call_id: waiting.callId }),
    });
    waiting.resolve(approved);
    return true;
  }

  /** Denies and forgets every waiting request: a late answer finds nothing, and faces clear the prompt. */
  denyAll(): void {
    for (const approvalId of [...this.waiting.keys()]) this.respond(approvalId, false);
  }

  /** Denies the requests still waiting of turn `turnId`, which is ending. */
  denyTurn(turnId: string): void {
    for (const [approvalId, waiting] of [...this.waiting]) {
      if (waiting.turnId === turnId) this.respond(approvalId, false);
    }
  }
}

type ShownRequest = ApprovalRequestEvent extends infer E
  ? E extends ApprovalRequestEvent
    ? Omit<E, "approval_id">
    : never
  : never;

/** What faces are shown of a request: an MCP call's `trusted` flag stays in the agent. */
function onTheWire(request: ApprovalRequest): ShownRequest {
  if (request.kind === "shell") return request;
  const { trusted: _, ...shown } = request;
  return shown;
}
