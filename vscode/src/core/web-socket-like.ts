/**
 * The part of a WebSocket the host client uses: the WHATWG shape, which both the `ws` package and
 * browsers implement, so the client runs in the extension host, in tests and in a webview alike.
 */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
  onerror: ((event: { message?: string; error?: unknown }) => void) | null;
}

/** The WHATWG `readyState` of an open socket. */
export const WS_OPEN = 1;

/**
 * Opens a socket to `url` offering `protocols`, with `headers` where the platform can send them
 * (Node can; a browser cannot, and relies on the key subprotocol instead).
 */
export type SocketFactory = (
  url: string,
  protocols: string[],
  headers: Record<string, string>,
) => WebSocketLike;
