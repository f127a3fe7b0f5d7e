/**
 * The engine-level conversation: what every engine renders with its own chat template. The server
 * turns Responses input items and Chat Completions messages into this one shape.
 */
export type ChatMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string }
  | { role: "assistant"; content: string; toolCalls?: ToolCall[] }
  | { role: "tool"; callId: string; name: string; content: string };

export interface ToolCall {
  callId: string;
  name: string;
  /** The arguments as a JSON text, exactly as the model wrote them. */
  arguments: string;
}

/** Which tool calls a generation may or must make (`"none"` is served by sending no tools). */
export type ToolChoice = "auto" | "required" | { name: string };

export interface ToolDefinition {
  name: string;
  description?: string;
  /** JSON Schema of the arguments object. */
  parameters?: Record<string, unknown>;
}
