import { Command } from "commander";
import { describe, expect, test } from "vitest";
import { addServingFlags, type ServingFlags, servingOptions } from "./serving-flags.js";

function parse(args: string[]): ServingFlags {
  const command = addServingFlags(new Command().exitOverride().configureOutput({ writeErr: () => {} }));
  command.parse(args, { from: "user" });
  return command.opts<ServingFlags>();
}

describe("spark serve's memory flags", () => {
  test("--max-connections and --store-mb become the server's connection cap and store budget", () => {
    const options = servingOptions(parse(["--max-connections", "8", "--store-mb", "64"]), {
      kind: "scripted",
      parallel: 1,
    });
    expect(options).toMatchObject({ maxConnections: 8, storeBytes: 64 * 1024 * 1024 });
  });

  test("left out, the server's defaults apply; zero or fractions are refused", () => {
    expect(servingOptions(parse([]), { kind: "scripted", parallel: 1 })).not.toHaveProperty("maxConnections");
    expect(() => parse(["--max-connections", "0"])).toThrow(/at least 1/);
    expect(() => parse(["--store-mb", "1.5"])).toThrow(/whole number/);
  });

  test("--connection-minutes becomes the Responses WebSocket lifetime in ms; zero is refused", () => {
    const options = servingOptions(parse(["--connection-minutes", "5"]), { kind: "scripted", parallel: 1 });
    expect(options).toMatchObject({ connectionLifetimeMs: 5 * 60_000 });
    expect(servingOptions(parse([]), { kind: "scripted", parallel: 1 })).not.toHaveProperty(
      "connectionLifetimeMs",
    );
    expect(() => parse(["--connection-minutes", "0"])).toThrow(/at least 1/);
  });
});
