import { Command } from "commander";
import { describe, expect, test } from "vitest";
import { startStallingUpstream } from "../engine/upstream/test-support/stalling-upstream.js";
import { addServingFlags, loadUpstreamEngine, type ServingFlags } from "./serving-flags.js";

function parse(args: string[]): ServingFlags {
  const command = addServingFlags(new Command().exitOverride().configureOutput({ writeErr: () => {} }));
  command.parse(args, { from: "user" });
  return command.opts<ServingFlags>();
}

describe("spark serve's upstream flags", () => {
  test("defaults: health checks on, prefix routing, the x-session-id header", () => {
    expect(parse([])).toMatchObject({
      upstreamRouter: false,
      upstreamHealth: "on",
      upstreamRouting: "prefix",
      sessionHeader: "x-session-id",
    });
    expect(() => parse(["--upstream-health", "maybe"])).toThrow();
    expect(() => parse(["--upstream-routing", "random"])).toThrow();
    expect(() => parse(["--session-header", "bad header"])).toThrow(/HTTP header name/);
    expect(parse(["--session-header", "X-Conversation"]).sessionHeader).toBe("x-conversation");
  });

  test("--upstream-router: one URL, no health checks, the conversation in the named header", async () => {
    await using router = await startStallingUpstream(["ok"]);
    const flags = parse([
      ...["--upstream", router.url, "--upstream-model", "m", "--upstream-router"],
      ...["--session-header", "x-conversation"],
    ]);
    await using engine = await loadUpstreamEngine(flags, 4096);
    for await (const _ of engine.generate({
      messages: [{ role: "user", content: "hi" }],
      conversation: "c1",
    })) {
    }
    expect(router.probes).toBe(0);
    expect(router.requests[0]?.headers["x-conversation"]).toBe("c1");

    await expect(
      loadUpstreamEngine(
        parse([
          "--upstream",
          router.url,
          "--upstream",
          router.url,
          "--upstream-model",
          "m",
          "--upstream-router",
        ]),
      ),
    ).rejects.toThrow(/one --upstream/);
  });

  test("--upstream-health off turns the checks off for a pool of several", async () => {
    await using a = await startStallingUpstream(["ok"]);
    await using b = await startStallingUpstream(["ok"]);
    const flags = parse([
      ...["--upstream", a.url, "--upstream", b.url, "--upstream-model", "m", "--upstream-health", "off"],
    ]);
    await using engine = await loadUpstreamEngine(flags, 4096);
    expect(a.probes + b.probes).toBe(0);
    expect(engine.pool.replicas.every((replica) => replica.healthy)).toBe(true);
    await using _checked = await loadUpstreamEngine(
      parse(["--upstream", a.url, "--upstream-model", "m"]),
      4096,
    );
    expect(a.probes).toBeGreaterThan(0);
  });
});
