import { lstat, readFile } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import path from "node:path";
import { SparkError } from "../../protocol/errors.js";

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8",
};

/** Build outputs named with a content hash (`app-3F2KQ7XA.js`) never change under that name. */
const HASHED = /-[A-Z0-9]{8,}\.[a-z0-9]+$/;

/**
 * The web page's policy: its own scripts, styles and sockets only, never framed (the page holds
 * the API key, and clickjacking could drive the agent).
 */
const PAGE_HEADERS = {
  "content-security-policy":
    "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
};

/**
 * Serves GET and HEAD of plain files under `root` (`/` is `index.html`). Refuses anything that
 * could leave the folder: `..` and `.` segments, hidden names, backslashes, NUL, encoded slashes,
 * symbolic links. Hashed file names are cached for a year; everything else is revalidated.
 * Throws a SparkError `not_found` for anything it does not serve.
 */
export async function serveStatic(req: IncomingMessage, res: ServerResponse, root: string): Promise<void> {
  const pathname = (req.url ?? "/").split("?")[0]!.split("#")[0]!;
  let decoded: string;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    throw notFound(pathname);
  }
  const segments = decoded.split("/").slice(1);
  if (segments.at(-1) === "") segments[segments.length - 1] = "index.html";
  const unsafe = segments.some(
    (segment) => segment === "" || segment.startsWith(".") || /[\\\0]/.test(segment) || segment.includes("/"),
  );
  if (unsafe || /%2f/i.test(pathname)) throw notFound(pathname);
  const base = path.resolve(root);
  const file = path.join(base, ...segments);
  if (!file.startsWith(base + path.sep)) throw notFound(pathname);
  const info = await lstat(file).catch(() => null);
  if (!info?.isFile()) throw notFound(pathname);
  const body = await readFile(file);
  const ext = path.extname(file).toLowerCase();
  res.writeHead(200, {
    "content-type": CONTENT_TYPES[ext] ?? "application/octet-stream",
    "content-length": body.length,
    "cache-control": HASHED.test(file) ? "public, max-age=31536000, immutable" : "no-cache",
    "x-content-type-options": "nosniff",
    ...(ext === ".html" ? PAGE_HEADERS : {}),
  });
  res.end(req.method === "HEAD" ? undefined : body);
}

function notFound(pathname: string): SparkError {
  return new SparkError("not_found", `No file at ${pathname}.`);
}
