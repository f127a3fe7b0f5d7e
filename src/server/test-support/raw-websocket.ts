import { randomBytes } from "node:crypto";
import { connect, type Socket } from "node:net";

/** What a raw connection saw: the server's close code (if it sent a close frame) and the end. */
export interface RawOutcome {
  /** The code of the server's close frame; null when it closed without one. */
  closeCode: number | null;
  /** The HTTP status line's code when the upgrade was refused. */
  refusedStatus: number | null;
  /** The server's text messages, in order. */
  messages: string[];
}

/**
 * A WebSocket client that writes raw bytes after the handshake, so tests can send frames that no
 * well-behaved library would (bad opcodes, unmasked frames, absurd lengths).
 */
export class RawWebSocket {
  private buffer = Buffer.alloc(0);
  private upgraded = false;
  private answerSeen = false;
  private resolveAnswer: () => void = () => {};
  /** Settles once the server answered the upgrade request (or ended the connection). */
  private readonly answer = new Promise<void>((resolve) => {
    this.resolveAnswer = resolve;
  });
  private readonly outcome: RawOutcome = {
    closeCode: null,
    refusedStatus: null,
    messages: [],
  };
  /** Settles when the server ends the connection. */
  readonly ended: Promise<RawOutcome>;

  private constructor(private readonly socket: Socket) {
    this.ended = new Promise((resolve) => {
      socket.on("close", () => {
        this.resolveAnswer();
        resolve(this.outcome);
      });
    });
    socket.on("error", () => {}); // a reset by the server is an outcome, not a test failure
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
  }

  /**
   * Connects and sends an upgrade request for `path`; resolves once the server answered it (101 or
   * a refusal). `key` overrides the `Sec-WebSocket-Key` (to send a bad one).
   */
  static async open(
    url: string,
    path: string,
    options: { key?: string; headers?: Record<string, string> } = {},
  ): Promise<RawWebSocket> {
    const { hostname, port } = new URL(url);
    const socket = connect(Number(port), hostname);
    const raw = new RawWebSocket(socket);
    const headers = {
      host: `${hostname}:${port}`,
      upgrade: "websocket",
      connection: "Upgrade",
      "sec-websocket-key": options.key ?? randomBytes(16).toString("base64"),
      "sec-websocket-version": "13",
      ...options.headers,
    };
    const head = Object.entries(headers)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join("");
    socket.write(`GET ${path} HTTP/1.1\r\n${head}\r\n`);
    await raw.answer;
    return raw;
  }

  /** Whether the server accepted the upgrade (101). */
  get accepted(): boolean {
    return this.upgraded;
  }

  write(bytes: Buffer): void {
    if (!this.socket.destroyed) this.socket.write(bytes);
  }

  /** Closes our side at once. */
  destroy(): void {
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    if (!this.answerSeen) {
      const end = this.buffer.indexOf("\r\n\r\n");
      if (end < 0) return;
      const status = Number(this.buffer.subarray(0, end).toString("latin1").split(" ")[1]);
      this.upgraded = status === 101;
      if (!this.upgraded) this.outcome.refusedStatus = status;
      this.buffer = this.upgraded ? this.buffer.subarray(end + 4) : Buffer.alloc(0);
      this.answerSeen = true;
      this.resolveAnswer();
    }
    if (this.upgraded) this.readFrames();
  }

  /** Reads the server's (unmasked) frames, noting a close frame's code. */
  private readFrames(): void {
    for (;;) {
      const frame = parseServerFrame(this.buffer);
      if (!frame) return;
      this.buffer = this.buffer.subarray(frame.size);
      if (frame.opcode === 0x1) this.outcome.messages.push(frame.payload.toString("utf8"));
      if (frame.opcode === 0x8)
        this.outcome.closeCode = frame.payload.length >= 2 ? frame.payload.readUInt16BE(0) : 1005;
    }
  }
}

function parseServerFrame(buffer: Buffer): { opcode: number; payload: Buffer; size: number } | null {
  if (buffer.length < 2) return null;
  const opcode = buffer[0]! & 0x0f;
  let length = buffer[1]! & 0x7f;
  let offset = 2;
  if (length === 126) {
    if (buffer.length < 4) return null;
    length = buffer.readUInt16BE(2);
    offset = 4;
  } else if (length === 127) {
    if (buffer.length < 10) return null;
    length = Number(buffer.readBigUInt64BE(2));
    offset = 10;
  }
  if (buffer.length < offset + length) return null;
  return { opcode, payload: buffer.subarray(offset, offset + length), size: offset + length };
}

export interface FrameOptions {
  /** FIN bit. Default: true. */
  fin?: boolean;
  /** RSV1-3 bits (0-7). Default: 0. */
  rsv?: number;
  /** Mask the payload as a client must. Default: true. */
  masked?: boolean;
  /** The length to declare instead of the payload's (a lie). Default: the payload's. */
  declaredLength?: bigint;
}

/** One client frame, byte by byte as RFC 6455 lays it out (or breaks it, as options say). */
export function clientFrame(opcode: number, payload: Buffer, options: FrameOptions = {}): Buffer {
  const { fin = true, rsv = 0, masked = true } = options;
  const length = options.declaredLength ?? BigInt(payload.length);
  const head = [(fin ? 0x80 : 0) | ((rsv & 7) << 4) | (opcode & 0x0f)];
  const maskBit = masked ? 0x80 : 0;
  let extended = Buffer.alloc(0);
  if (length < 126n) head.push(maskBit | Number(length));
  else if (length < 65536n) {
    head.push(maskBit | 126);
    extended = Buffer.alloc(2);
    extended.writeUInt16BE(Number(length));
  } else {
    head.push(maskBit | 127);
    extended = Buffer.alloc(8);
    extended.writeBigUInt64BE(length);
  }
  if (!masked) return Buffer.concat([Buffer.from(head), extended, payload]);
  const mask = randomBytes(4);
  const body = Buffer.from(payload.map((byte, i) => byte ^ mask[i % 4]!));
  return Buffer.concat([Buffer.from(head), extended, mask, body]);
}

/** A close frame's payload: the code, then an optional reason. */
export function closePayload(code: number, reason = ""): Buffer {
  const payload = Buffer.alloc(2 + Buffer.byteLength(reason));
  payload.writeUInt16BE(code);
  payload.write(reason, 2);
  return payload;
}

/**
 * The seven malformed frames that each used to stop the server, with the close code RFC 6455 (and
 * ws) give each violation.
 */
export const MALFORMED_FRAMES: { name: string; bytes: () => Buffer; closeCode: number }[] = [
  {
    name: "a text frame that is not UTF-8",
    bytes: () => clientFrame(0x1, Buffer.from([0xc3, 0x28, 0xff])),
    closeCode: 1007,
  },
  { name: "a reserved opcode", bytes: () => clientFrame(0x3, Buffer.from("x")), closeCode: 1002 },
  {
    name: "an unmasked client frame",
    bytes: () => clientFrame(0x1, Buffer.from("{}"), { masked: false }),
    closeCode: 1002,
  },
  {
    name: "a close frame with an invalid code",
    bytes: () => clientFrame(0x8, closePayload(1005)),
    closeCode: 1002,
  },
  {
    name: "a declared length of 2^62",
    bytes: () => clientFrame(0x1, Buffer.from("x"), { declaredLength: 2n ** 62n }),
    closeCode: 1009,
  },
  {
    name: "a control frame over 125 bytes",
    bytes: () => clientFrame(0x9, Buffer.alloc(126, 0x61)),
    closeCode: 1002,
  },
  {
    name: "a continuation with no start",
    bytes: () => clientFrame(0x0, Buffer.from("x")),
    closeCode: 1002,
  },
];
