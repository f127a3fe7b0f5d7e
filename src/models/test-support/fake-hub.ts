import { createHash, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A local stand-in for the Hugging Face resolve endpoint, for tests. `HEAD|GET
 * /<owner>/<repo>/resolve/<revision>/<file>` answers 302 to `/cdn/<n>` with `X-Linked-Etag` (the
 * sha256) and `X-Linked-Size`, as the hub does for LFS files; `/cdn/<n>` serves the bytes with
 * `Range` support. Unknown repositories get 401 `RepoNotFound`, unknown files 404 `EntryNotFound`.
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
  /** The next CDN GET sends `afterBytes` of its body, then closes the connection. */
  dropNextAfter(afterBytes: number): void;
  /** The next CDN GET sends `afterBytes` of its body, then goes silent (never ends). */
  stallNextAfter(afterBytes: number): void;
  /** Answer Range requests with a full 200 response. */
  ignoreRanges: boolean;
  close(): Promise<void>;
}

/** A GGUF-looking buffer: the magic bytes then random data. */
export function fakeGguf(bytes: number): Buffer {
  return Buffer.concat([Buffer.from("GGUF", "latin1"), randomBytes(bytes - 4)]);
}

export function sha256Hex(content: Buffer): string {
  return createHash("sha256").update(content).digest("hex");
}

type Fault = { kind: "drop" | "stall"; afterBytes: number };

export async function startFakeHub(files: FakeHubFile[]): Promise<FakeHub> {
  const requests: RecordedRequest[] = [];
  const faults: Fault[] = [];
  const state = { ignoreRanges: false };

  const serveCdn = (req: IncomingMessage, res: ServerResponse, entry: FakeHubFile) => {
    const content = entry.content;
    const size = content.length;
    const rangeMatch = state.ignoreRanges ? null : req.headers.range?.match(/^bytes=(\d+)-$/);
    let start = 0;
    if (rangeMatch) {
      start = Number(rangeMatch[1]);
      if (start >= size) {
        res.writeHead(416, { "Content-Range": `bytes */${size}` }).end();
        return;
      }
      res.writeHead(206, {
        "Content-Length": size - start,
        "Content-Range": `bytes ${start}-${size - 1}/${size}`,
        "Accept-Ranges": "bytes",
      });
    } else {
      res.writeHead(200, { "Content-Length": size, "Accept-Ranges": "bytes" });
    }
    if (req.method === "HEAD") {
      res.end();
      return;
    }
    const body = content.subarray(start);
    const fault = faults.shift();
    if (fault === undefined) {
      res.end(body);
    } else if (fault.kind === "drop") {
      res.write(body.subarray(0, fault.afterBytes), () => res.socket?.end());
    } else {
      res.write(body.subarray(0, fault.afterBytes));
    }
  };

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const path = decodeURIComponent(url.pathname);
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
      else serveCdn(req, res, entry);
      return;
    }
    const resolve = path.match(/^\/([^/]+)\/([^/]+)\/resolve\/([^/]+)\/(.+)$/);
    if (!resolve) {
      res.writeHead(404).end();
      return;
    }
    const [, owner, repo, revision, file] = resolve;
    const repoFiles = files.filter((f) => f.owner === owner && f.repo === repo);
    if (repoFiles.length === 0) {
      res.writeHead(401, { "X-Error-Code": "RepoNotFound", "X-Error-Message": "Repository not found" }).end();
      return;
    }
    const index = files.findIndex(
      (f) => f.owner === owner && f.repo === repo && f.file === file && (f.revision ?? "main") === revision,
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
    dropNextAfter: (afterBytes) => faults.push({ kind: "drop", afterBytes }),
    stallNextAfter: (afterBytes) => faults.push({ kind: "stall", afterBytes }),
    get ignoreRanges() {
      return state.ignoreRanges;
    },
    set ignoreRanges(value: boolean) {
      state.ignoreRanges = value;
    },
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
