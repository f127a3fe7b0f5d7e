import type { ChatMessage, ToolChoice, ToolDefinition } from "../protocol/chat.js";
import { SparkError } from "../protocol/errors.js";
import type { InputItem, ResponseCreateBody } from "../protocol/responses-request.js";

type ContentPart = { type: string; text?: string; refusal?: string };

/** Text of a message's content; media parts are refused because a text model would ignore them. */
export function contentText(content: string | ContentPart[], param: string): string {
  if (typeof content === "string") return content;
  let out = "";
  for (const [index, part] of content.entries()) {
    if (part.type === "input_text" || part.type === "output_text" || part.type === "text")
      out += part.text ?? "";
    else if (part.type === "refusal") out += part.refusal ?? "";
    else {
      throw new SparkError(
        "unsupported_parameter",
        `Content of type '${part.type}' is not supported by this model.`,
        {
          param: `${param}[${index}].type`,
        },
      );
    }
  }
  return out;
}

/**
 * Responses input items as engine messages. `developer` and `system` messages are both system
 * text; consecutive function calls join the assistant message before them; reasoning items from
 * other models are dropped.
 */
export function inputToMessages(
  input: ResponseCreateBody["input"],
  known: readonly ChatMessage[] = [],
): ChatMessage[] {
  if (input === undefined) return [];
  if (typeof input === "string") return [{ role: "user", content: input }];
  const out: ChatMessage[] = [];
  const callNames = new Map<string, string>();
  for (const message of known) {
    if (message.role === "assistant")
      for (const call of message.toolCalls ?? []) callNames.set(call.callId, call.name);
  }
  for (const [index, item] of (input as InputItem[]).entries()) {
    const param = `input[${index}]`;
    if (!("type" in item) || item.type === undefined || item.type === "message") {
      const message = item as Extract<InputItem, { role: string }>;
      const content = contentText(message.content as string | ContentPart[], `${param}.content`);
      if (message.role === "assistant") out.push({ role: "assistant", content });
      else if (message.role === "user") out.push({ role: "user", content });
      else out.push({ role: "system", content });
    } else if (item.type === "function_call") {
      const call = { callId: item.call_id, name: item.name, arguments: item.arguments };
      callNames.set(call.callId, call.name);
      const last = out.at(-1);
      if (last?.role === "assistant") last.toolCalls = [...(last.toolCalls ?? []), call];
      else out.push({ role: "assistant", content: "", toolCalls: [call] });
    } else if (item.type === "function_call_output") {
      const output = contentText(item.output as string | ContentPart[], `${param}.output`);
      out.push({
        role: "tool",
        callId: item.call_id,
        name: callNames.get(item.call_id) ?? "",
        content: output,
      });
    }
  }
  return out;
}

/** Function tools offered to the model; other tool types cannot run locally and are left out. */
export function functionTools(body: ResponseCreateBody): ToolDefinition[] {
  if (body.tool_choice === "none") return [];
  const tools: ToolDefinition[] = [];
  for (const tool of body.tools ?? []) {
    if (tool.type !== "function") continue;
    const fn = tool as {
      name: string;
      description?: string | null;
      parameters?: Record<string, unknown> | null;
    };
    tools.push({
      name: fn.name,
      ...(fn.description ? { description: fn.description } : {}),
      ...(fn.parameters ? { parameters: fn.parameters } : {}),
    });
  }
  return tools;
}

/** A `tool_choice` of either API, its function's name taken out of the API's own nesting. */
export type WireToolChoice =
  | "auto"
  | "none"
  | "required"
  | { type: "function"; name: string }
  | { type: string };

/**
 * What the engine is told about tool calls: `tool_choice` checked against the tools offered.
 * `"required"` needs a tool; a named function must be one of them (a 400 naming it otherwise);
 * `"none"` is served by offering no tools, so the engine hears `"auto"`. Other tool types cannot
 * run on a local model and are refused.
 */
export function engineToolChoice(
  choice: WireToolChoice | null | undefined,
  tools: readonly ToolDefinition[],
  param: { choice: string; name: string },
): ToolChoice {
  if (choice === undefined || choice === null || choice === "auto" || choice === "none") return "auto";
  if (choice === "required") {
    if (tools.length > 0) return "required";
    throw new SparkError("invalid_request", "tool_choice 'required' needs at least one function tool.", {
      param: param.choice,
    });
  }
  if ("name" in choice && choice.type === "function") {
    if (tools.some((tool) => tool.name === choice.name)) return { name: choice.name };
    throw new SparkError(
      "invalid_request",
      `tool_choice names the function '${choice.name}', which is not among the request's tools.`,
      { param: param.name },
    );
  }
  throw new SparkError(
    "unsupported_parameter",
    `tool_choice of type '${choice.type}' is not supported: only function tools run here.`,
    { param: param.choice },
  );
}

/** Refuses settings that Spark would otherwise silently ignore while they change the result. */
export function rejectUnsupported(body: ResponseCreateBody): void {
  if (body.background) {
    throw new SparkError("unsupported_parameter", "Background responses are not supported.", {
      param: "background",
    });
  }
}

/**
 * Every tool result answers an earlier call, and every call has its result before the model runs
 * again: the shape every chat template assumes.
 */
export function checkToolPairing(messages: readonly ChatMessage[], param: string): void {
  const open = new Set<string>();
  for (const message of messages) {
    if (message.role === "assistant") {
      for (const call of message.toolCalls ?? []) open.add(call.callId);
    } else if (message.role === "tool") {
      if (!open.delete(message.callId)) {
        throw new SparkError(
          "invalid_request",
          `No function call with call_id '${message.callId}' precedes its output.`,
          {
            param,
          },
        );
      }
    }
  }
  const [unanswered] = open;
  if (unanswered !== undefined) {
    throw new SparkError("invalid_request", `No tool output found for function call ${unanswered}.`, {
      param,
    });
  }
}
