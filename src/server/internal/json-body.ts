import type { IncomingMessage } from "node:http";
import { SparkError } from "../../protocol/errors.js";
import { type JsonLimits, parseUntrustedJson } from "../../protocol/json-guard.js";
import { type BodyLimits, readBody } from "./http-io.js";

/**
 * `application/json`, or a structured-syntax `+json` type (RFC 6839: JSON by definition, e.g.
 * `application/vnd.api+json`). None of them is a type a web page may POST without a CORS preflight,
 * which `text/plain`, `multipart/form-data` and form encoding are.
 */
const JSON_MEDIA_TYPE = /^application\/(?:json|[a-z0-9!#$&^_.-]+\+json)$/;

/**
 * Throws `unsupported_media_type` (415) unless the request declares a JSON body: the media type
 * above, with parameters allowed, and a `charset` (if given) of UTF-8, which is how JSON is read.
 * A missing Content-Type is refused too: a body a browser sends from a Blob without a type comes
 * without one, and every OpenAI client sends `application/json`.
 */
export function checkJsonContentType(req: IncomingMessage): void {
  const header = req.headers["content-type"];
  const [mediaType = "", ...parameters] = (header ?? "").split(";").map((part) => part.trim().toLowerCase());
  const charset = parameters
    .map((parameter) => /^charset\s*=\s*"?([^"]*)"?$/.exec(parameter)?.[1])
    .find((value) => value !== undefined);
  if (JSON_MEDIA_TYPE.test(mediaType) && (charset === undefined || charset === "utf-8" || charset === "utf8"))
    return;
  throw new SparkError(
    "unsupported_media_type",
    header === undefined
      ? "The request has no Content-Type; send the body as JSON with Content-Type: application/json."
      : `Content-Type ${JSON.stringify(header)} is not supported; send the body as JSON (UTF-8) with Content-Type: application/json.`,
  );
}

/** A request's JSON body: its media type checked, then read within limits, then parsed within limits. */
export async function readJsonBody(
  req: IncomingMessage,
  limits: { body: BodyLimits; json: JsonLimits },
): Promise<unknown> {
  try {
    checkJsonContentType(req);
  } catch (error) {
    req.resume(); // the body is not read; draining it keeps the connection usable
    throw error;
  }
  return parseUntrustedJson(await readBody(req, limits.body), limits.json);
}
