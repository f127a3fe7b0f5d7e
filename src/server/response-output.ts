import type { ToolCall } from "../protocol/chat.js";
import { SparkError } from "../protocol/errors.js";
import type {
  FunctionCallOutputItem,
  MessageOutputItem,
  ReasoningOutputItem,
  ResponseObject,
  ResponseStreamEvent,
} from "../protocol/responses.js";
import { newId } from "./internal/ids.js";
import { snapshot } from "./internal/snapshot.js";

interface OpenCall {
  item: FunctionCallOutputItem;
  index: number;
}

/**
 * A response's output items as the engine's events build them (a message, reasoning, function
 * calls), each opened, streamed and closed with its `response.*` events.
 */
export class ResponseOutput {
  /** The answer text so far, all message items together. */
  answer = "";
  /** The calls the engine finished, in order. */
  readonly toolCalls: ToolCall[] = [];
  private message: { item: MessageOutputItem; index: number; text: string } | null = null;
  private reasoning: { item: ReasoningOutputItem; index: number; text: string } | null = null;
  /** Calls the engine started and has not finished, by call id. */
  private readonly openCalls = new Map<string, OpenCall>();

  /** `aborted`: true once the run was cancelled or steered; items closed then are `incomplete`. */
  constructor(
    private readonly output: ResponseObject["output"],
    private readonly emit: (event: ResponseStreamEvent) => void,
    private readonly aborted: () => boolean,
  ) {}

  /** Answer text: streamed into the open message item, opened first when there is none. */
  appendText(text: string): void {
    this.closeReasoning();
    if (!this.message) {
      const item: MessageOutputItem = {
        type: "message",
        id: newId("msg"),
        status: "in_progress",
        role: "assistant",
        content: [],
      };
      const index = this.output.push(item) - 1;
      this.message = { item, index, text: "" };
      this.emit({ type: "response.output_item.added", output_index: index, item: snapshot(item) });
      this.emit({
        type: "response.content_part.added",
        item_id: item.id,
        output_index: index,
        content_index: 0,
        part: { type: "output_text", text: "", annotations: [], logprobs: [] },
      });
    }
    this.answer += text;
    this.message.text += text;
    const { item, index } = this.message;
    this.emit({
      type: "response.output_text.delta",
      item_id: item.id,
      output_index: index,
      content_index: 0,
      delta: text,
      logprobs: [],
    });
  }

  /** Ends the open message item, if any, with the text streamed so far. */
  private closeMessage(): void {
    if (!this.message) return;
    const { item, index, text: messageText } = this.message;
    const part = { type: "output_text" as const, text: messageText, annotations: [], logprobs: [] };
    item.content = [part];
    item.status = this.aborted() ? "incomplete" : "completed";
    this.emit({
      type: "response.output_text.done",
      item_id: item.id,
      output_index: index,
      content_index: 0,
      text: messageText,
      logprobs: [],
    });
    this.emit({
      type: "response.content_part.done",
      item_id: item.id,
      output_index: index,
      content_index: 0,
      part,
    });
    this.emit({ type: "response.output_item.done", output_index: index, item: snapshot(item) });
    this.message = null;
  }

  /** Reasoning text: streamed into the open reasoning item, opened first when there is none. */
  appendReasoning(text: string): void {
    this.closeMessage();
    if (!this.reasoning) {
      const item: ReasoningOutputItem = {
        type: "reasoning",
        id: newId("rs"),
        status: "in_progress",
        summary: [],
        content: [],
      };
      const index = this.output.push(item) - 1;
      this.reasoning = { item, index, text: "" };
      this.emit({ type: "response.output_item.added", output_index: index, item: snapshot(item) });
      this.emit({
        type: "response.content_part.added",
        item_id: item.id,
        output_index: index,
        content_index: 0,
        part: { type: "reasoning_text", text: "" },
      });
    }
    this.reasoning.text += text;
    const { item, index } = this.reasoning;
    this.emit({
      type: "response.reasoning_text.delta",
      item_id: item.id,
      output_index: index,
      content_index: 0,
      delta: text,
    });
  }

  /** Ends the open reasoning item, if any, with the text streamed so far. */
  private closeReasoning(): void {
    if (!this.reasoning) return;
    const { item, index, text } = this.reasoning;
    const part = { type: "reasoning_text" as const, text };
    item.content = [part];
    item.status = this.aborted() ? "incomplete" : "completed";
    const at = { item_id: item.id, output_index: index, content_index: 0 };
    this.emit({ type: "response.reasoning_text.done", ...at, text });
    this.emit({ type: "response.content_part.done", ...at, part });
    this.emit({ type: "response.output_item.done", output_index: index, item: snapshot(item) });
    this.reasoning = null;
  }

  /** A new function_call item, `in_progress` with no arguments yet. */
  private openCall(callId: string, name: string): OpenCall {
    this.closeMessage();
    this.closeReasoning();
    const item: FunctionCallOutputItem = {
      type: "function_call",
      id: newId("fc"),
      status: "in_progress",
      call_id: callId,
      name,
      arguments: "",
    };
    const index = this.output.push(item) - 1;
    this.emit({ type: "response.output_item.added", output_index: index, item: snapshot(item) });
    return { item, index };
  }

  /** A call the engine starts streaming. */
  startCall(callId: string, name: string): void {
    if (this.openCalls.has(callId))
      throw new SparkError("server_error", `The engine started call '${callId}' twice.`);
    this.openCalls.set(callId, this.openCall(callId, name));
  }

  /** More of a started call's arguments. */
  appendArguments(callId: string, delta: string): void {
    const call = this.openCalls.get(callId);
    if (!call)
      throw new SparkError("server_error", `The engine streamed arguments of an unknown call '${callId}'.`);
    call.item.arguments += delta;
    this.emit({
      type: "response.function_call_arguments.delta",
      item_id: call.item.id,
      output_index: call.index,
      delta,
    });
  }

  /** A finished call: the one that streamed under its id, or a whole call sent at once. */
  finishCall(call: ToolCall): void {
    let open = this.openCalls.get(call.callId);
    this.openCalls.delete(call.callId);
    if (!open) {
      open = this.openCall(call.callId, call.name);
      this.emit({
        type: "response.function_call_arguments.delta",
        item_id: open.item.id,
        output_index: open.index,
        delta: call.arguments,
      });
    }
    const { item, index } = open;
    this.emit({
      type: "response.function_call_arguments.done",
      item_id: item.id,
      output_index: index,
      name: call.name,
      arguments: call.arguments,
    });
    item.arguments = call.arguments;
    item.status = "completed";
    this.emit({ type: "response.output_item.done", output_index: index, item: snapshot(item) });
    this.toolCalls.push(call);
  }

  /**
   * Ends every item still open. A call the engine never finished (a cancelled or cut-off stream)
   * ends `incomplete` with the arguments streamed so far; it is not part of the conversation, so no
   * output is owed for it and nobody should run it.
   */
  close(): void {
    this.closeMessage();
    this.closeReasoning();
    for (const { item, index } of this.openCalls.values()) {
      item.status = "incomplete";
      this.emit({ type: "response.output_item.done", output_index: index, item: snapshot(item) });
    }
    this.openCalls.clear();
  }
}
