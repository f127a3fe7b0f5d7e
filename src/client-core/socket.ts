/**
 * The part of a WebSocket the host client uses: the WHATWG shape, which both the `ws` package and
 * browsers implement, so one client runs in Node (the terminal, the extension host, tests) and in
 * browsers (the web app, a webview) alike.
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
 * (Node can; a browser cannot, and offers its key as a subprotocol instead).
 */
export type SocketFactory = (
  url: string,
  protocols: string[],
  headers: Record<string, string>,
) => WebSocketLike;

/** The agent host's subprotocol; the host echoes it. */
export const SPARK_SUBPROTOCOL = "spark.v1";

/**
 * The subprotocol a browser, which cannot send `Authorization`, offers its key as:
 * `spark.key.` + base64url (no padding) of the key's UTF-8 bytes.
 */
export function keySubprotocol(apiKey: string): string {
  const bytes = new TextEncoder().encode(apiKey);
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return `spark.key.${btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "")}`;
}

/** Sockets of the platform's own `WebSocket` (browsers, webviews): headers cannot be sent. */
export const browserSocketFactory: SocketFactory = (url, protocols) =>
  new WebSocket(url, protocols) as unknown as WebSocketLike;
