import { createHash, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A local stand-in for the Hugging Face hub, for tests:
 * - `GET /v2/<owner>/<repo>/manifests/<tag>` names the repository's GGUF for a quantization tag
 *   (`latest`: its first file), as `{"ggufFile": {"rfilename": ...}}`, the way llama.cpp and
 *   node-llama-cpp resolve `hf:owner/repo:TAG`;
 * - `HEAD|GET /<owner>/<repo>/resolve/<revision>/<file>` answers 302 to `/cdn/<n>` with
 *   `X-Linked-Etag` (the sha256) and `X-Linked-Size`, as the hub does for LFS files;
 * - `/cdn/<n>` serves the bytes, with `Range` support.
 * Unknown repositories get 401 `RepoNotFound`, unknown files 404 `EntryNotFound`.
 */

export interface FakeHubFile {
  owner: string;
  repo: string;
  file: string;
  revision?: string;
  content: Buffer;
  /** The sha256 to publish; null publishes none. Default: the content's real sha256. */
  sha256?: string | null;
  /** Answer the resolve URL with this status instead (e.g. 403 for a gated model). */
  status?: number;
  /** Its first this many ranged CDN GETs (the downloader's reads) send the last byte changed. Default: 0. */
  corruptGets?: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  range: string | undefined;
  authorization: string | undefined;
}

export interface FakeHub {
  endpoint: string;
  requests: RecordedRequest[];
  /** The next ranged CDN GET sends `afterBytes` of its body, then goes silent (never ends). */
  stallNextAfter(afterBytes: number): void;
  close(): Promise<void>;
}

/** A GGUF-looking buffer: the magic bytes then random data. */
export function fakeGguf(bytes: number): Buffer {
  return Buffer.concat([Buffer.from("GGUF", "latin1"), randomBytes(bytes - 4)]);
}

export function sha256Hex(content: Buffer): string {
  return createHash("sha256").update(content).digest("hex");
}

const LATER_SPLIT_PART = /-(?!00001)\d{5}-of-\d{5}\.gguf$/;

function serveBytes(req: IncomingMessage, res: ServerResponse, content: Buffer, stallAfter?: number): void {
  const size = content.length;
  const range = req.headers.range?.match(/^bytes=(\d+)-(\d*)$/);
  let start = 0;
  let end = size - 1;
  if (range) {
    start = Number(range[1]);
    if (range[2] !== "") end = Math.min(Number(range[2]), size - 1);
    if (start > end) {
      res.writeHead(416, { "Content-Range": `bytes */${size}` }).end();
      return;
    }
    res.writeHead(206, {
      "Content-Length": end - start + 1,
      "Content-Range": `bytes ${start}-${end}/${size}`,
      "Accept-Ranges": "bytes",
    });
  } else {
    res.writeHead(200, { "Content-Length": size, "Accept-Ranges": "bytes" });
  }
  if (req.method === "HEAD") res.end();
  else if (stallAfter === undefined) res.end(content.subarray(start, end + 1));
  else res.write(content.subarray(start, Math.min(start + stallAfter, end + 1)));
}

/** The file's bytes with the last one changed, counting one of its corrupt GETs. */
function corrupted(entry: FakeHubFile): Buffer {
  entry.corruptGets = (entry.corruptGets ?? 0) - 1;
  const bytes = Buffer.from(entry.content);
  bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 0xff;
  return bytes;
}

export async function startFakeHub(files: FakeHubFile[]): Promise<FakeHub> {
  const requests: RecordedRequest[] = [];
  const stalls: number[] = [];

  const server: Server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://127.0.0.1").pathname);
    requests.push({
      method: req.method ?? "GET",
      path,
      range: req.headers.range,
      authorization: req.headers.authorization,
    });
    const cdn = path.match(/^\/cdn\/(\d+)$/);
    if (cdn) {
      const entry = files[Number(cdn[1])];
      if (entry === undefined) res.writeHead(404).end();
      else
        serveBytes(
          req,
          res,
          req.method === "GET" && req.headers.range && (entry.corruptGets ?? 0) > 0
            ? corrupted(entry)
            : entry.content,
          req.method === "GET" && req.headers.range ? stalls.shift() : undefined,
        );
      return;
    }
    const route =
      path.match(/^\/v2\/([^/]+)\/([^/]+)\/manifests\/([^/]+)$/) ??
      path.match(/^\/([^/]+)\/([^/]+)\/resolve\/([^/]+)\/(.+)$/);
    const [, owner, repo, third, file] = route ?? [];
    const repoFiles = files.filter((f) => f.owner === owner && f.repo === repo);
    if (route === null || repoFiles.length === 0) {
      res.writeHead(401, { "X-Error-Code": "RepoNotFound", "X-Error-Message": "Repository not found" }).end();
      return;
    }
    if (file === undefined) {
      const tag = third!.toLowerCase();
      if (tag === "oversized-manifest") {
        // A hub that answers without end: the client must stop reading.
        res
          .writeHead(200, { "Content-Type": "application/json" })
          .end(`{"pad": "${"x".repeat(2 * 1024 * 1024)}"}`);
        return;
      }
      const found = repoFiles.find(
        (f) => !LATER_SPLIT_PART.test(f.file) && (tag === "latest" || f.file.toLowerCase().includes(tag)),
      );
      if (found === undefined) res.writeHead(404).end();
      else
        res
          .writeHead(200, { "Content-Type": "application/json" })
          .end(JSON.stringify({ ggufFile: { rfilename: found.file } }));
      return;
    }
    const index = files.findIndex(
      (f) => repoFiles.includes(f) && f.file === file && (f.revision ?? "main") === third,
    );
    const entry = files[index];
    if (entry === undefined) {
      res.writeHead(404, { "X-Error-Code": "EntryNotFound", "X-Error-Message": "Entry not found" }).end();
      return;
    }
    if (entry.status !== undefined) {
      res.writeHead(entry.status, entry.status === 403 ? { "X-Error-Code": "GatedRepo" } : {}).end();
      return;
    }
    const sha = entry.sha256 === undefined ? sha256Hex(entry.content) : entry.sha256;
    res
      .writeHead(302, {
        Location: `/cdn/${index}`,
        "X-Linked-Size": entry.content.length,
        ...(sha === null ? {} : { "X-Linked-Etag": `"${sha}"`, ETag: `"${sha}"` }),
      })
      .end();
  });

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests,
    stallNextAfter: (afterBytes) => stalls.push(afterBytes),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** An endpoint on a port nothing listens on: connections are refused. */
export async function closedPortEndpoint(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
