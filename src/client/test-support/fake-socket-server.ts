import type { AddressInfo } from "node:net";
import { type WebSocket, WebSocketServer } from "ws";
import type { ResponseObject } from "../../protocol/responses.js";

type ClientEvent = { type: string; [key: string]: unknown };

/**
 * Answers one client event. `send` takes a frame as text (sent as is) or as an object, which gets
 * the connection's next `sequence_number` unless it brings its own.
 */
export type FakeHandler = (
  event: ClientEvent,
  send: (frame: string | object) => void,
  socket: WebSocket,
) => void;

export interface FakeSocketServer extends AsyncDisposable {
  /** The `baseUrl` to give the client. */
  url: string;
  readonly connections: number;
}

/**
 * A Responses WebSocket server that sends exactly the frames a test scripts, including ones that
 * break the protocol (which a real Spark server never does).
 */
export async function fakeSocketServer(handler: FakeHandler): Promise<FakeSocketServer> {
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
  await new Promise<void>((resolve) => wss.once("listening", () => resolve()));
  let connections = 0;
  wss.on("connection", (socket) => {
    connections++;
    let sequence = 0;
    const send = (frame: string | object) =>
      socket.send(
        typeof frame === "string" ? frame : JSON.stringify({ sequence_number: sequence++, ...frame }),
      );
    socket.on("message", (data) => handler(JSON.parse(String(data)) as ClientEvent, send, socket));
  });
  return {
    url: `http://127.0.0.1:${(wss.address() as AddressInfo).port}/v1`,
    get connections() {
      return connections;
    },
    async [Symbol.asyncDispose]() {
      for (const client of wss.clients) client.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

/** A fake that answers its n-th `response.create` (on any connection) with `replies[n]` (the last one after that). */
export function answeringCreates(replies: (string | object)[][]): Promise<FakeSocketServer> {
  let creates = 0;
  return fakeSocketServer((event, send) => {
    if (event.type !== "response.create") return;
    for (const frame of replies[Math.min(creates++, replies.length - 1)] ?? []) send(frame);
  });
}

export function response(id: string, status: ResponseObject["status"] = "in_progress"): ResponseObject {
  return {
    id,
    object: "response",
    created_at: 0,
    status,
    error: null,
    incomplete_details: null,
    instructions: null,
    max_output_tokens: null,
    model: "fake",
    output: [],
    parallel_tool_calls: true,
    previous_response_id: null,
    temperature: null,
    top_p: null,
    tool_choice: "auto",
    tools: [],
    store: true,
    text: { format: { type: "text" } },
    truncation: "disabled",
    metadata: {},
    usage: null,
    timing: null,
  };
}

export function delta(text: string): object {
  return {
    type: "response.output_text.delta",
    item_id: "msg_1",
    output_index: 0,
    content_index: 0,
    delta: text,
    logprobs: [],
  };
}
