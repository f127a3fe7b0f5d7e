import type {
  FunctionCallOutputItem,
  IncompleteReason,
  OutputItem,
  ResponseObject,
} from "../../protocol/responses.js";
import type { ServerEvent } from "../response-stream.js";

/**
 * Rebuilds the current response from its events, so that over HTTP (where a cancel aborts the
 * request and no terminal event arrives) the client can still say what the response was when it
 * stopped: the output the consumer saw, nothing more.
 */
export class ResponseAccumulator {
  private response: ResponseObject | null = null;

  get current(): ResponseObject | null {
    return this.response;
  }

  /** Function calls the current response has finished: a steer has to wait for their outputs. */
  get completedCalls(): FunctionCallOutputItem[] {
    return (this.response?.output ?? []).filter(
      (item): item is FunctionCallOutputItem => item.type === "function_call" && item.status === "completed",
    );
  }

  apply(event: ServerEvent): void {
    switch (event.type) {
      case "response.created":
      case "response.in_progress":
      case "response.queued":
      case "response.completed":
      case "response.incomplete":
      case "response.failed":
        this.response = structuredClone(event.response);
        return;
      case "response.output_item.added":
      case "response.output_item.done":
        if (this.response) this.response.output[event.output_index] = structuredClone(event.item);
        return;
      case "response.content_part.added":
      case "response.content_part.done": {
        const item = this.itemAt(event.output_index);
        const part = structuredClone(event.part);
        if (item?.type === "message" && part.type === "output_text") item.content[event.content_index] = part;
        if (item?.type === "reasoning" && part.type === "reasoning_text")
          item.content[event.content_index] = part;
        return;
      }
      case "response.output_text.delta": {
        const item = this.itemAt(event.output_index);
        if (item?.type !== "message") return;
        item.content[event.content_index] ??= {
          type: "output_text",
          text: "",
          annotations: [],
          logprobs: [],
        };
        const part = item.content[event.content_index]!;
        part.text += event.delta;
        return;
      }
      case "response.output_text.done": {
        const part = this.itemAt(event.output_index);
        const content = part?.type === "message" ? part.content[event.content_index] : undefined;
        if (content) content.text = event.text;
        return;
      }
      case "response.reasoning_text.delta": {
        const item = this.itemAt(event.output_index);
        if (item?.type !== "reasoning") return;
        item.content[event.content_index] ??= { type: "reasoning_text", text: "" };
        item.content[event.content_index]!.text += event.delta;
        return;
      }
      case "response.reasoning_text.done": {
        const item = this.itemAt(event.output_index);
        const part = item?.type === "reasoning" ? item.content[event.content_index] : undefined;
        if (part) part.text = event.text;
        return;
      }
      case "response.function_call_arguments.delta": {
        const item = this.itemAt(event.output_index);
        if (item?.type === "function_call") item.arguments += event.delta;
        return;
      }
      case "response.function_call_arguments.done": {
        const item = this.itemAt(event.output_index);
        if (item?.type === "function_call") item.arguments = event.arguments;
        return;
      }
      case "response.prefill.progress":
      case "response.steer.accepted":
      case "response.steer.pending":
      case "response.steer.failed":
      case "spark.draft.accepted":
      case "spark.draft.done":
      case "error":
        return;
      default: {
        // Event types Spark does not send (other servers' extensions) do not change the output.
        const other: never = event;
        void other;
      }
    }
  }

  /** The response as the consumer saw it, ended `incomplete` for `reason`; null before `response.created`. */
  incomplete(reason: IncompleteReason): ResponseObject | null {
    if (!this.response) return null;
    const response = structuredClone(this.response);
    response.status = "incomplete";
    response.incomplete_details = { reason };
    response.output = response.output
      .filter(Boolean)
      .map((item) => (item.status === "in_progress" ? { ...item, status: "incomplete" } : item));
    return response;
  }

  private itemAt(index: number): OutputItem | undefined {
    return this.response?.output[index];
  }
}
