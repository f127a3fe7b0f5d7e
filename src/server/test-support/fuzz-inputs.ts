import { clientFrame, MALFORMED_FRAMES } from "./raw-websocket.js";

/** A seeded PRNG (mulberry32): the same seed gives the same inputs, so a failure can be replayed. */
export class Random {
  private state: number;

  constructor(readonly seed: number) {
    this.state = seed >>> 0;
  }

  /** In [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)]!;
  }

  bytes(length: number): Buffer {
    return Buffer.from(Array.from({ length }, () => this.int(0, 255)));
  }
}

/** Keys that have a meaning on Object.prototype, and JSON values that stress number handling. */
const PROTOTYPE_KEYS = ["__proto__", "constructor", "prototype", "toString", "hasOwnProperty", "valueOf"];
const ODD_NUMBERS = [
  "1e400",
  "-1e400",
  "1e-400",
  "18446744073709551617",
  "-0",
  "0.1e999999",
  "123456789012345678901234567890",
];
const ODD_STRINGS = [
  "",
  "\u0000",
  "\ud800",
  "a".repeat(5000),
  "💥",
  "\u202e",
  "null",
  "{}",
  "../../etc/passwd",
];

/** Random JSON text: any shape, with prototype keys, odd numbers and odd strings. */
export function randomJson(random: Random, depth = 0): string {
  const kind = random.int(0, depth > 4 ? 3 : 6);
  switch (kind) {
    case 0:
      return random.pick(["null", "true", "false"]);
    case 1:
      return random.next() < 0.5 ? random.pick(ODD_NUMBERS) : String(random.int(-1e9, 1e9));
    case 2:
      return JSON.stringify(random.pick(ODD_STRINGS));
    case 3:
      return JSON.stringify(`s${random.int(0, 999)}`);
    case 4: {
      const items = Array.from({ length: random.int(0, 4) }, () => randomJson(random, depth + 1));
      return `[${items.join(",")}]`;
    }
    default: {
      const keys = Array.from({ length: random.int(0, 4) }, () =>
        random.next() < 0.3 ? random.pick(PROTOTYPE_KEYS) : `k${random.int(0, 9)}`,
      );
      return `{${keys.map((key) => `${JSON.stringify(key)}:${randomJson(random, depth + 1)}`).join(",")}}`;
    }
  }
}

/** `[[[…]]]` or `{"a":{"a":…}}`, far deeper than any limit. */
export function deepJson(random: Random): string {
  const depth = random.int(100, 20_000);
  return random.next() < 0.5
    ? `${"[".repeat(depth)}${"]".repeat(depth)}`
    : `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
}

/**
 * A valid body with one field broken: a wrong type, an odd number, a prototype key, or a field
 * set to random JSON. Serialized by hand, so `__proto__` survives as a key.
 */
export function mutatedBody(random: Random, valid: Record<string, unknown>): string {
  const fields = Object.entries(valid).map(
    ([key, value]) => [key, JSON.stringify(value)] as [string, string],
  );
  const mutation = random.int(0, 3);
  const target = random.pick([
    ...Object.keys(valid),
    "temperature",
    "top_p",
    "max_output_tokens",
    "max_tokens",
    "stream",
    "tools",
    "metadata",
    "previous_response_id",
    "prediction",
    "seed",
    "stop",
  ]);
  const value =
    mutation === 0
      ? random.pick(ODD_NUMBERS)
      : mutation === 1
        ? randomJson(random)
        : mutation === 2
          ? random.pick(['"x"', "[]", "{}", "true", "null", "-1"])
          : deepJson(random);
  const key = random.next() < 0.2 ? random.pick(PROTOTYPE_KEYS) : target;
  const kept = fields.filter(([name]) => name !== key);
  return `{${[...kept, [key, value]].map(([name, text]) => `${JSON.stringify(name)}:${text}`).join(",")}}`;
}

/** One hostile thing to write after a WebSocket handshake, and whether a close frame may follow. */
export interface HostileFrames {
  name: string;
  bytes: Buffer;
  /** False when the server may still be waiting for bytes (a declared length not yet sent). */
  canClose: boolean;
}

/** Message types the two WebSocket endpoints know, plus names that are not theirs. */
const TYPES = [
  "response.create",
  "response.cancel",
  "response.steer",
  "thread.start",
  "thread.resume",
  "turn.start",
  "turn.steer",
  "approval.respond",
  "patch.accept",
  "thread.delete",
  ...PROTOTYPE_KEYS,
];

const FIELDS = [
  "input",
  "model",
  "thread_id",
  "previous_response_id",
  "response_id",
  "after_seq",
  "approved",
  "title",
  "generate",
  "stream",
];
const PLAUSIBLE = ['"hi"', '"scripted"', '"thr_missing"', '"resp_missing"', "0", "true", "false", "[]"];

/** `{"type": …}` with a few known fields, set to plausible or random values. */
function randomMessage(random: Random): string {
  const fields = Array.from({ length: random.int(0, 4) }, () => {
    const key = random.next() < 0.2 ? random.pick(PROTOTYPE_KEYS) : random.pick(FIELDS);
    const value = random.next() < 0.5 ? random.pick(PLAUSIBLE) : randomJson(random);
    return `,${JSON.stringify(key)}:${value}`;
  });
  return `{"type":${JSON.stringify(random.pick(TYPES))}${fields.join("")}}`;
}

const text = (payload: string, options = {}) => clientFrame(0x1, Buffer.from(payload), options);

export function hostileFrames(random: Random): HostileFrames {
  switch (random.int(0, 7)) {
    case 0: {
      const frame = random.pick(MALFORMED_FRAMES);
      return { name: frame.name, bytes: frame.bytes(), canClose: true };
    }
    case 1:
      return { name: "random bytes", bytes: random.bytes(random.int(1, 64)), canClose: false };
    case 2:
      return { name: "random JSON", bytes: text(randomJson(random)), canClose: true };
    case 3:
      return { name: "deep nesting", bytes: text(deepJson(random)), canClose: true };
    case 4: {
      const declared =
        random.next() < 0.5 ? BigInt(random.int(2 ** 16, 2 ** 24)) : 2n ** BigInt(random.int(33, 63));
      return {
        name: `a declared length of ${declared}`,
        bytes: text("{}", { declaredLength: declared }),
        canClose: false,
      };
    }
    case 5:
      return { name: "a message of a random type", bytes: text(randomMessage(random)), canClose: true };
    case 6:
      return {
        name: "a fragment, then random JSON",
        bytes: Buffer.concat([text('{"type":', { fin: false }), text(randomJson(random))]),
        canClose: true,
      };
    default:
      return {
        name: "a binary frame",
        bytes: clientFrame(0x2, random.bytes(random.int(0, 32))),
        canClose: true,
      };
  }
}
