import WebSocket from "ws";
import type { SocketFactory, WebSocketLike } from "./socket.js";

/**
 * Sockets for Node (the terminal, the extension host, tests): the `ws` package, which can send
 * `Authorization` and sends no `Origin`, as Spark expects of a non-browser client.
 */
export const nodeSocketFactory: SocketFactory = (url, protocols, headers) =>
  new WebSocket(url, protocols, { headers, perMessageDeflate: false }) as unknown as WebSocketLike;
