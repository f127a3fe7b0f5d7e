import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { SparkError } from "../../protocol/errors.js";

/** The WebSocket subprotocol of Spark's own endpoints; the server echoes it. */
export const SPARK_SUBPROTOCOL = "spark.v1";

/**
 * Browsers cannot set `Authorization` on a WebSocket, so the web app offers its key as a second
 * subprotocol: this prefix and the key in base64url (subprotocols are tokens; base64url keeps any
 * key one). The server never echoes it.
 */
export const KEY_SUBPROTOCOL_PREFIX = "spark.key.";

/**
 * Checks `Authorization: Bearer <key>` in constant time; no keys configured means open. For a
 * WebSocket upgrade (`subprotocols: true`), a key offered as a `spark.key.<base64url>`
 * subprotocol is accepted too.
 */
export function checkApiKey(
  req: IncomingMessage,
  keys: readonly Buffer[],
  options: { subprotocols?: boolean } = {},
): void {
  if (keys.length === 0) return;
  const header = req.headers.authorization ?? "";
  const match = /^Bearer\s+(.+)$/i.exec(header);
  const offered = options.subprotocols && !match ? keyFromSubprotocols(req) : null;
  const presented = digest(offered ?? match?.[1]?.trim() ?? "");
  // Compare against every key so timing does not reveal which one matched.
  let ok = false;
  for (const key of keys) ok = timingSafeEqual(presented, key) || ok;
  if (!ok) {
    throw new SparkError(
      "unauthorized",
      match || offered !== null
        ? "Incorrect API key provided."
        : "Missing API key: send 'Authorization: Bearer <key>'.",
    );
  }
}

/** Whether the request carries one of `keys` in `Authorization` (always, when there are none). */
export function hasApiKey(req: IncomingMessage, keys: readonly Buffer[]): boolean {
  try {
    checkApiKey(req, keys);
    return true;
  } catch {
    return false;
  }
}

function keyFromSubprotocols(req: IncomingMessage): string | null {
  const offered = (req.headers["sec-websocket-protocol"] ?? "").split(",").map((p) => p.trim());
  const token = offered.find((p) => p.startsWith(KEY_SUBPROTOCOL_PREFIX));
  return token === undefined
    ? null
    : Buffer.from(token.slice(KEY_SUBPROTOCOL_PREFIX.length), "base64url").toString("utf8");
}

export function digest(key: string): Buffer {
  return createHash("sha256").update(key).digest();
}

/**
 * Browsers always send `Origin`; the SDK and curl do not. A request whose Origin is present and not
 * one of Spark's own (or an explicitly allowed one) is refused, so no web page the user happens
 * to open can drive the local server.
 */
export function checkOrigin(req: IncomingMessage, allowed: ReadonlySet<string>): void {
  const origin = req.headers.origin;
  if (origin === undefined || allowed.has(origin.toLowerCase())) return;
  throw new SparkError("forbidden_origin", `Requests from origin '${origin}' are not allowed.`);
}

/** The origins Spark's own web app is served from, for a server listening on `host:port`. */
export function ownOrigins(host: string, port: number, secure: boolean): string[] {
  const scheme = secure ? "https" : "http";
  const hosts = new Set([host, "localhost", "127.0.0.1", "[::1]"]);
  if (host === "0.0.0.0" || host === "::") hosts.delete(host);
  return [...hosts].map((h) => `${scheme}://${h.includes(":") && !h.startsWith("[") ? `[${h}]` : h}:${port}`);
}
