import type { ToolCall } from "../../../protocol/chat.js";
import type { EngineEvent } from "../../engine.js";
import type { ParsedOutput } from "./output-parser.js";

/** What the parsed output asks of the decoding, besides its events. */
export interface CallMarks {
  /** Output offset where a call's trigger ends, when one was read. */
  callsBegin: number | undefined;
  /** The call, or the section of calls, ended. */
  callsEnd: boolean;
}

let callCounter = 0;
function newCallId(): string {
  return `call_${Date.now().toString(36)}${(callCounter++).toString(36)}`;
}

/**
 * Turns the output parser's pieces into engine events (each call given its id as it starts) and
 * keeps what the reply said: its text, whether it reasoned, its calls.
 */
export class ReplyEvents {
  /** The answer text emitted so far. */
  text = "";
  reasoned = false;
  readonly calls: ToolCall[] = [];
  private openCall: { callId: string; name: string } | undefined;
  private events: EngineEvent[] = [];

  read(pieces: readonly ParsedOutput[]): CallMarks {
    const marks: CallMarks = { callsBegin: undefined, callsEnd: false };
    for (const piece of pieces) {
      switch (piece.type) {
        case "text":
          this.text += piece.text;
          this.events.push({ type: "text", text: piece.text });
          break;
        case "reasoning":
          this.reasoned = true;
          this.events.push({ type: "reasoning", text: piece.text });
          break;
        case "calls_begin":
          marks.callsBegin = piece.at;
          break;
        case "call_start":
          this.openCall = { callId: newCallId(), name: piece.name };
          this.events.push({ type: "tool_call_start", ...this.openCall });
          break;
        case "call_delta":
          if (this.openCall)
            this.events.push({ type: "tool_call_delta", callId: this.openCall.callId, delta: piece.delta });
          break;
        case "call":
          this.calls.push({
            callId: this.openCall?.callId ?? newCallId(),
            name: piece.name,
            arguments: piece.arguments,
          });
          this.events.push({ type: "tool_call", call: this.calls.at(-1)! });
          this.openCall = undefined;
          break;
        case "calls_end":
          marks.callsEnd = true;
          break;
      }
    }
    return marks;
  }

  /** Reads what the parser held back when the model stopped: its text and reasoning only. */
  readLast(pieces: readonly ParsedOutput[]): void {
    for (const piece of pieces) {
      if (piece.type === "text" || piece.type === "reasoning") this.read([piece]);
    }
  }

  /** The events read since the last call, in order. */
  take(): EngineEvent[] {
    const events = this.events;
    this.events = [];
    return events;
  }
}
