import { SparkError } from "../protocol/errors.js";
import { type JsonLimits, parseUntrustedJson } from "../protocol/json-guard.js";
import {
  CLIENT_EVENT_SCHEMAS,
  type ClientEventType,
  type ResponseCancelEvent,
  type ResponseCreateEvent,
  type ResponseSteerEvent,
  type SparkDraftEvent,
  streamIdSchema,
} from "../protocol/responses-request.js";
import { validate } from "../protocol/validate.js";

/** What a client sends on a Responses WebSocket, checked against its type's schema. */
export type ClientEvent = ResponseCreateEvent | ResponseSteerEvent | ResponseCancelEvent | SparkDraftEvent;

/** A frame's JSON: text frames only, at most `json.maxBytes`, parsed within the JSON limits. */
export function parseFrame(data: Buffer, isBinary: boolean, json: JsonLimits): unknown {
  if (isBinary) throw new SparkError("invalid_event", "Events are JSON text frames, not binary.");
  if (data.length > json.maxBytes) {
    throw new SparkError("payload_too_large", `The event is larger than ${json.maxBytes} bytes.`);
  }
  return parseUntrustedJson(data.toString("utf8"), json);
}

/** The client event a frame's JSON holds; throws `unknown_event_type` or `invalid_event`. */
export function clientEventOf(raw: unknown): ClientEvent {
  const type = (raw as { type?: unknown } | null)?.type;
  if (typeof type !== "string" || !Object.hasOwn(CLIENT_EVENT_SCHEMAS, type)) {
    throw new SparkError(
      "unknown_event_type",
      `Unknown event type ${JSON.stringify(type)}; expected one of ${Object.keys(CLIENT_EVENT_SCHEMAS).join(", ")}.`,
      { param: "type" },
    );
  }
  return validate(CLIENT_EVENT_SCHEMAS[type as ClientEventType], raw, "invalid_event") as ClientEvent;
}

/** A `response.create`'s valid `stream_id`, so that even its refusal is routed to its lane. */
export function laneOfCreate(raw: unknown): string | undefined {
  if ((raw as { type?: unknown } | null)?.type !== "response.create") return undefined;
  const parsed = streamIdSchema.safeParse((raw as { stream_id?: unknown }).stream_id);
  return parsed.success ? parsed.data : undefined;
}
