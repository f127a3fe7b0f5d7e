import { describe, expect, test } from "vitest";
import type { SteerOutcome } from "../client/responses-client.js";
import { TurnSteers } from "./turn-steers.js";

/** A promise and its resolve, to settle by hand. */
function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const accepted = (id: string): Promise<SteerOutcome> => Promise.resolve({ status: "accepted", id });

describe("TurnSteers: steers whose @ mentions are read first", () => {
  test("a steer reading a file goes before the steers sent after it, and the model gets its content", async () => {
    const steers = new TurnSteers();
    const file = deferred<string>();
    const sent: string[] = [];
    const send = (text: string) => {
      sent.push(text);
      return accepted(`s${sent.length}`);
    };
    steers.after("see @a.ts", file.promise, send);
    expect(steers.busy).toBe(true);
    steers.after("and be brief", Promise.resolve("and be brief"), send);
    await Promise.resolve();
    expect(sent).toEqual([]);
    file.resolve("see @a.ts\n\nFile a.ts (mentioned): ...");
    await steers.answered();
    expect(sent).toEqual(["see @a.ts\n\nFile a.ts (mentioned): ...", "and be brief"]);
    expect(steers.busy).toBe(false);
  });

  test("with no response running it waits for the next request, which carries its content; the turn records it as typed", async () => {
    const steers = new TurnSteers();
    steers.after("see @a.ts", Promise.resolve("see @a.ts + file"), () => null);
    await steers.answered();
    expect(steers.waiting).toBe(true);
    expect(steers.carry()).toEqual(["see @a.ts + file"]);
    expect(await steers.started("resp_1", true)).toEqual(["see @a.ts"]);
  });

  test("a turn that ends while the file is read reports the steer as not sent, and it is never sent after", async () => {
    const steers = new TurnSteers();
    const file = deferred<string>();
    const sent: string[] = [];
    steers.after("see @a.ts", file.promise, (text) => {
      sent.push(text);
      return accepted("s1");
    });
    expect(steers.takeUndelivered()).toEqual(["see @a.ts"]);
    file.resolve("see @a.ts + file");
    await steers.answered();
    expect(sent).toEqual([]);
  });

  test("a send that throws leaves the steer waiting for the next request, and later steers still go", async () => {
    const steers = new TurnSteers();
    steers.after("one", Promise.resolve("one"), () => {
      throw new Error("socket gone");
    });
    await steers.answered();
    expect(steers.busy).toBe(false);
    expect(steers.carry()).toEqual(["one"]);
  });
});
