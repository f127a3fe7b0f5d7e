import net from "node:net";

/**
 * A TCP proxy in front of a server, so a test can cut every connection through it (as a network
 * drop would) and refuse new ones until it is restored.
 */
export class SocketProxy implements AsyncDisposable {
  private readonly sockets = new Set<net.Socket>();
  private down = false;
  targetPort = 0;

  private constructor(private readonly server: net.Server) {}

  static async start(): Promise<SocketProxy> {
    const server = net.createServer();
    const proxy = new SocketProxy(server);
    server.on("connection", (client) => proxy.onConnection(client));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return proxy;
  }

  get port(): number {
    return (this.server.address() as net.AddressInfo).port;
  }

  /** Drops every open connection and refuses new ones. */
  cut(): void {
    this.down = true;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  restore(): void {
    this.down = false;
  }

  private onConnection(client: net.Socket): void {
    if (this.down) {
      client.destroy();
      return;
    }
    const upstream = net.connect(this.targetPort, "127.0.0.1");
    this.sockets.add(client);
    this.sockets.add(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    const close = () => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on("error", close).on("close", close);
    upstream.on("error", close).on("close", close);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
