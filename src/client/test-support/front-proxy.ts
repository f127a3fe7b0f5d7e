import { createServer, type IncomingMessage, request, type Server } from "node:http";
import { type AddressInfo, connect, type Socket } from "node:net";
import type { Duplex } from "node:stream";

/** What the proxy does with a WebSocket upgrade. */
export type UpgradeMode =
  /** Pass it through to the target (a working WebSocket). */
  | "relay"
  /** Answer 404, like a server without WebSocket mode. */
  | "refuse"
  /** Accept the connection and never answer, like a proxy that swallows upgrades. */
  | "hang";

/**
 * An HTTP server on loopback in front of a real Spark server: requests are forwarded (aborts
 * included, so the server sees a client go), upgrades are relayed, refused or swallowed, and every
 * connection can be dropped at once to play a server that goes away mid-stream.
 */
export class FrontProxy implements AsyncDisposable {
  upgrades: UpgradeMode;
  /** Upgrade requests seen, whatever the mode. */
  upgradeAttempts = 0;
  private readonly sockets = new Set<Duplex>();

  private constructor(
    private readonly server: Server,
    private readonly target: URL,
    upgrades: UpgradeMode,
  ) {
    this.upgrades = upgrades;
    server.on("connection", (socket) => this.track(socket));
    server.on("request", (req, res) => {
      const upstream = request(
        new URL(req.url ?? "/", target),
        { method: req.method, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on("error", () => res.destroy());
      res.on("close", () => {
        if (!res.writableFinished) upstream.destroy();
      });
      req.pipe(upstream);
    });
    server.on("upgrade", (req, socket, head) => this.onUpgrade(req, socket, head));
  }

  /** `target` is the Spark server's root URL (`http://127.0.0.1:PORT`). */
  static async start(target: string, upgrades: UpgradeMode): Promise<FrontProxy> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return new FrontProxy(server, new URL(target), upgrades);
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Destroys every connection through the proxy, as a crashing server would. */
  dropConnections(): void {
    for (const socket of this.sockets) socket.destroy();
  }

  async close(): Promise<void> {
    this.dropConnections();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.upgradeAttempts++;
    this.track(socket);
    if (this.upgrades === "hang") return;
    if (this.upgrades === "refuse") {
      const body = JSON.stringify({
        error: { type: "not_found_error", code: "not_found", message: "No WebSocket here." },
      });
      socket.end(
        `HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
      );
      return;
    }
    const upstream: Socket = connect(Number(this.target.port), this.target.hostname, () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2)
        lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      upstream.write(`${lines.join("\r\n")}\r\n\r\n`);
      upstream.write(head);
      socket.pipe(upstream).pipe(socket);
    });
    this.track(upstream);
    upstream.on("error", () => socket.destroy());
    socket.on("error", () => upstream.destroy());
    upstream.on("close", () => socket.destroy());
    socket.on("close", () => upstream.destroy());
  }

  private track(socket: Duplex): void {
    this.sockets.add(socket);
    socket.on("close", () => this.sockets.delete(socket));
  }
}
