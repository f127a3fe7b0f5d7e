import type { ChatMessage } from "../protocol/chat.js";
import type { ResponseStreamEvent, SteerErrorCode } from "../protocol/responses.js";
import type { ResponseSteerEvent } from "../protocol/responses-request.js";
import { contentText } from "./input-conversion.js";
import { newId } from "./internal/ids.js";
import type { PreparedResponse } from "./response-run.js";
import type { StoredResponse } from "./response-store.js";
import type { QueuedSteer } from "./socket-lane.js";

/** The steer a `response.steer` asks for, with its input as user messages. */
export function queuedSteer(event: ResponseSteerEvent): QueuedSteer {
  const messages: ChatMessage[] =
    typeof event.input === "string"
      ? [{ role: "user", content: event.input }]
      : event.input.map((message, index) => ({
          role: "user" as const,
          content: contentText(message.content as never, `input[${index}].content`),
        }));
  return { id: newId("steer"), previousResponseId: event.previous_response_id, input: event.input, messages };
}

/** `response.steer.failed` for a steer, accepted or not. */
export function steerFailed(
  steer: { id?: string; previousResponseId: string; input: ResponseSteerEvent["input"] },
  code: SteerErrorCode,
  message: string,
): ResponseStreamEvent {
  const { id, previousResponseId, input } = steer;
  return {
    type: "response.steer.failed",
    error: { type: "invalid_request_error", code, message },
    steer: { ...(id === undefined ? {} : { id }), previous_response_id: previousResponseId, input },
  };
}

/** `response.steer.pending`: the steered response stopped to wait for its calls' outputs. */
export function steerPending(stored: StoredResponse, steer: QueuedSteer): ResponseStreamEvent {
  return {
    type: "response.steer.pending",
    reason: "waiting_for_required_input",
    required_input: stored.pendingCalls.map((call) => ({
      type: "function_call_output",
      call_id: call.callId,
      name: call.name,
    })),
    steer: { id: steer.id, previous_response_id: steer.previousResponseId },
  };
}

/** The response steering continues with: the steered one's settings, from its state. */
export function successorOf(
  prepared: PreparedResponse,
  stored: StoredResponse,
  steers: readonly QueuedSteer[],
): PreparedResponse {
  return {
    id: newId("resp"),
    engine: prepared.engine,
    parent: stored,
    input: steers.flatMap((steer) => steer.messages),
    settings: { ...stored.settings, prediction: undefined },
    conversation: stored.conversation,
    generate: true,
  };
}
