/** A piece of a model's output as OutputParser (and its CallsParser) read it. */
export type ParsedOutput =
  | { type: "text"; text: string }
  | { type: "reasoning"; text: string }
  /** The trigger of a call (or a section of calls) ends at output offset `at`; parsing pauses here. */
  | { type: "calls_begin"; at: number }
  | { type: "call_start"; name: string }
  | { type: "call_delta"; delta: string }
  | { type: "call"; name: string; arguments: string }
  /** The call, or the section of calls, is over: the model writes freely again. */
  | { type: "calls_end" }
  | { type: "stop" };
