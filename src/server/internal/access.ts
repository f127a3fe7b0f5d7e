import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { SparkError } from "../../protocol/errors.js";

/** Checks `Authorization: Bearer <key>` in constant time; no keys configured means open. */
export function checkApiKey(req: IncomingMessage, keys: readonly Buffer[]): void {
  if (keys.length === 0) return;
  const header = req.headers.authorization ?? "";
  const match = /^Bearer\s+(.+)$/i.exec(header);
  const presented = digest(match?.[1]?.trim() ?? "");
  // Compare against every key so timing does not reveal which one matched.
  let ok = false;
  for (const key of keys) ok = timingSafeEqual(presented, key) || ok;
  if (!ok) {
    throw new SparkError(
      "unauthorized",
      match ? "Incorrect API key provided." : "Missing API key: send 'Authorization: Bearer <key>'.",
    );
  }
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
