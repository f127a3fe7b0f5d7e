import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";

/**
 * How the fake upstream answers one request: `silent` never answers; `headers` sends its headers
 * and nothing more; `first-chunk` one output chunk and nothing more; `endless-line` one line that
 * never ends, written as fast as the client reads it; `ok` a whole short answer ("hi"); `shed-429`
 * and `shed-503` refuse it with that status and `Retry-After: 7`, as a router shedding load does.
 */
export type StallBehaviour =
  | "silent"
  | "headers"
  | "first-chunk"
  | "endless-line"
  | "ok"
  | "shed-429"
  | "shed-503";

export interface StalledRequest {
  /** Resolves when the client closed the connection (the request was aborted or ended). */
  closed: Promise<void>;
  headers: IncomingHttpHeaders;
}

export interface StallingUpstream extends AsyncDisposable {
  /** The API root, as a replica URL (`http://127.0.0.1:port/v1`). */
  url: string;
  /** The chat completion requests received so far, in order. */
  requests: StalledRequest[];
  /** Requests to any other path (health checks). */
  probes: number;
}

const chunk = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

/**
 * A loopback HTTP server that plays a misbehaving OpenAI-compatible upstream: its n-th chat
 * completion request gets `behaviours[n]` (the last one repeats). A stall is simply a server that
 * never writes again; nothing in it waits on time.
 */
export async function startStallingUpstream(behaviours: StallBehaviour[]): Promise<StallingUpstream> {
  const requests: StalledRequest[] = [];
  let probes = 0;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const closed = new Promise<void>((resolve) => res.once("close", () => resolve()));
    if (req.url !== "/v1/chat/completions") {
      probes++;
      res.writeHead(404).end();
      return;
    }
    req.resume();
    const behaviour = behaviours[Math.min(requests.length, behaviours.length - 1)]!;
    requests.push({ closed, headers: req.headers });
    if (behaviour === "silent") return;
    if (behaviour === "shed-429" || behaviour === "shed-503") {
      const text = JSON.stringify({ error: { message: "too busy", type: "rate_limit_error" } });
      res.writeHead(behaviour === "shed-429" ? 429 : 503, {
        "content-type": "application/json",
        "retry-after": "7",
      });
      res.end(text);
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.flushHeaders();
    if (behaviour === "first-chunk") res.write(chunk({ role: "assistant", content: "Hel" }));
    if (behaviour === "ok") {
      res.end(`${chunk({ role: "assistant", content: "hi" })}${chunk({}, "stop")}data: [DONE]\n\n`);
    }
    if (behaviour === "endless-line") {
      const block = "x".repeat(16 * 1024);
      res.write("data: ");
      const pump = () => {
        while (!res.destroyed && res.write(block)) {}
      };
      res.on("drain", pump);
      pump();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    get probes() {
      return probes;
    },
    async [Symbol.asyncDispose]() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
