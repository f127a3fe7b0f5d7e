import { SparkError } from "../../protocol/errors.js";

/** A TCP address (`tls`: `rediss://`, verified against the system's CAs) or a unix socket path. */
export type RedisAddress = { host: string; port: number; tls: boolean } | { path: string };

/** Where a Redis is and how to log in, from a `--store` URL. */
export interface RedisTarget {
  address: RedisAddress;
  username?: string;
  password?: string;
  db: number;
  /** The URL without its password, for messages. */
  shown: string;
}

const EXPECTED =
  "expected redis://[user:password@]host[:port][/db], rediss://… (TLS) or unix:///path/to/redis.sock[?db=N]";

/**
 * Reads `redis://[[user][:password]@]host[:port][/db]` (port 6379, db 0 by default), the same with
 * `rediss://` (TLS, the certificate checked against the system's CAs and the host name), or
 * `unix:///path/to/redis.sock[?db=N]`. Anything else (another scheme, a query or fragment on a TCP
 * URL, credentials on a unix URL, a db outside 0-65535) is `invalid_request`; the message never
 * repeats the password.
 */
export function parseRedisUrl(text: string): RedisTarget {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalid("is not a URL");
  }
  const shown = redact(url);
  if (url.protocol === "unix:") {
    if (url.host !== "" || url.username || url.password)
      throw invalid(
        "is a unix URL with a host or credentials (use unix:///path and --store-password-file)",
        shown,
      );
    if (!url.pathname || url.pathname === "/") throw invalid("names no socket path", shown);
    const extra = [...url.searchParams.keys()].filter((key) => key !== "db");
    if (extra.length > 0 || url.hash) throw invalid("may carry only ?db=N", shown);
    return {
      address: { path: decodeURIComponent(url.pathname) },
      db: dbNumber(url.searchParams.get("db") ?? "0", shown),
      shown,
    };
  }
  if (url.protocol !== "redis:" && url.protocol !== "rediss:")
    throw invalid("must start with redis://, rediss:// or unix://", shown);
  if (!url.hostname) throw invalid("names no host", shown);
  // TLS settings in a query (`?insecure`, `?ca=`) are refused rather than ignored: a private CA is
  // NODE_EXTRA_CA_CERTS, and skipping verification is not offered.
  if (url.search || url.hash) throw invalid("may not carry a query or fragment", shown);
  const path = url.pathname.replace(/^\//, "");
  const target: RedisTarget = {
    address: {
      host: url.hostname.replace(/^\[|\]$/g, ""),
      port: url.port ? Number(url.port) : 6379,
      tls: url.protocol === "rediss:",
    },
    db: dbNumber(path === "" ? "0" : path, shown),
    shown,
  };
  if (url.username) target.username = decodeURIComponent(url.username);
  if (url.password) target.password = decodeURIComponent(url.password);
  return target;
}

/** `host:port` or the socket path, for messages. */
export function describeAddress(address: RedisAddress): string {
  if ("path" in address) return address.path;
  const host = address.host.includes(":") ? `[${address.host}]` : address.host;
  return `${host}:${address.port}`;
}

function dbNumber(text: string, shown: string): number {
  if (!/^\d{1,5}$/.test(text) || Number(text) > 65535)
    throw invalid(`has a database number that is not 0-65535`, shown);
  return Number(text);
}

function redact(url: URL): string {
  if (!url.password) return url.href;
  const copy = new URL(url.href);
  copy.password = "***";
  return copy.href;
}

function invalid(why: string, shown?: string): SparkError {
  return new SparkError("invalid_request", `--store ${shown ?? "(the URL given)"} ${why}: ${EXPECTED}.`);
}
