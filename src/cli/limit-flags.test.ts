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
});
