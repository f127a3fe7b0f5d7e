import type { Engine } from "../engine/engine.js";
import type { ChatMessage } from "../protocol/chat.js";
import { SparkError } from "../protocol/errors.js";
import { outputFormatOfText } from "../protocol/output-format.js";
import type { ResponseCreateBody } from "../protocol/responses-request.js";
import {
  checkToolPairing,
  contentText,
  engineToolChoice,
  functionTools,
  inputToMessages,
  rejectUnsupported,
} from "./input-conversion.js";
import { newId } from "./internal/ids.js";
import type { PreparedResponse } from "./response-run.js";
import { historyOf, type StoredResponse } from "./response-store.js";
import { checkOutputFormat } from "./structured-output.js";

export interface PrepareOptions {
  engine: Engine;
  /** Finds the response a `previous_response_id` names (connection cache first, then the store). */
  lookup: (id: string) => StoredResponse | undefined;
  /**
   * Whether this server ran the response (so its engine may still hold the chain's state). False
   * marks the response `chainRecomputed`. Default: always true.
   */
  ranHere?: (id: string) => boolean;
  /** false pre-warms without generating. Default: true. */
  generate?: boolean;
  /** Messages that go before the request's own input (queued steering input). */
  prepend?: ChatMessage[];
}

/** Validates a create request against its chain and resolves everything a run needs. */
export function prepareResponse(body: ResponseCreateBody, options: PrepareOptions): PreparedResponse {
  rejectUnsupported(body);
  let parent: StoredResponse | null = null;
  if (body.previous_response_id) {
    parent = options.lookup(body.previous_response_id) ?? null;
    if (!parent) {
      throw new SparkError(
        "previous_response_not_found",
        `Previous response with id '${body.previous_response_id}' not found.`,
        { param: "previous_response_id" },
      );
    }
  }
  const history = parent ? historyOf(parent) : [];
  // Queued steering input goes first, but after the tool outputs the parent is waiting for, so
  // every call is still followed by its result.
  const own = inputToMessages(body.input, history);
  let answers = 0;
  while (own[answers]?.role === "tool") answers++;
  const input = [...own.slice(0, answers), ...(options.prepend ?? []), ...own.slice(answers)];
  checkToolPairing([...history, ...input], "input");
  const tools = functionTools(body);
  const toolChoice = engineToolChoice(body.tool_choice, tools, {
    choice: "tool_choice",
    name: "tool_choice.name",
  });
  const format = outputFormatOfText(body.text?.format);
  checkOutputFormat(options.engine, format, "text.format");
  const id = newId("resp");
  return {
    id,
    engine: options.engine,
    parent,
    input,
    generate: options.generate ?? true,
    conversation: parent?.conversation ?? id,
    ...(parent && options.ranHere && !options.ranHere(parent.id) && options.engine.info.engine !== "upstream"
      ? { chainRecomputed: true }
      : {}),
    settings: {
      instructions: body.instructions ?? null,
      tools,
      rawTools: body.tools ?? [],
      toolChoice: body.tool_choice ?? "auto",
      engineToolChoice: toolChoice,
      maxOutputTokens: body.max_output_tokens ?? null,
      temperature: body.temperature ?? null,
      topP: body.top_p ?? null,
      store: body.store ?? true,
      metadata: body.metadata ?? {},
      ...(format ? { format, textFormat: body.text?.format } : {}),
      ...(body.prediction
        ? { prediction: contentText(body.prediction.content as never, "prediction.content") }
        : {}),
    },
  };
}
