import { createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";

/** The key of requests when the server checks no API keys. */
export const ANONYMOUS = "anonymous";

/**
 * The rate-limit and fairness key of a request: a short digest of its bearer key when the server
 * checks keys (so the key itself is never kept or logged), else `anonymous` — without
 * authentication a client could pick any key, so a per-key budget would mean nothing.
 */
export function requestKey(req: IncomingMessage, authenticated: boolean): string {
  if (!authenticated) return ANONYMOUS;
  const match = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? "");
  const key = match?.[1]?.trim();
  if (!key) return ANONYMOUS;
  return `key_${createHash("sha256").update(key).digest("hex").slice(0, 12)}`;
}
