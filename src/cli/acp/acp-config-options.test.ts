import { execFileSync } from "node:child_process";
import { mkdtemp, realpath, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { AcpTestClient } from "./test-support/acp-test-client.js";
import { scriptedAcpEnv } from "./test-support/acp-test-env.js";

// What the ACP registry and editors ask of an agent beyond prompts: an auth method, the slash
// commands it takes, and its mode and model as session config options.

let repo: string;
let acp: AcpTestClient;

beforeAll(async () => {
  repo = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-acp-config-")));
  execFileSync("git", ["init", "-q"], { cwd: repo });
  const scratch = await mkdtemp(path.join(os.tmpdir(), "spark-acp-config-state-"));
  const env = await scriptedAcpEnv(scratch, [{ text: "Answered by the model." }]);
  // A second tier, loaded only on its first use (never here): something to switch to.
  await writeFile(
    path.join(scratch, "config", "spark", "config.toml"),
    `default_tier = "fast"\n[diagnostics]\nenabled = false\n[tiers.fast]\nengine = "llama"\n[tiers.deep]\nengine = "llama"\nmodel = "${path.join(scratch, "deep.gguf")}"\n`,
  );
  acp = AcpTestClient.start(repo, env);
});

afterAll(async () => {
  await acp?.close();
});

test("initialize offers an auth method the registry accepts; authenticate takes only it", async () => {
  const init = await acp.agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  expect(init.authMethods).toEqual([
    expect.objectContaining({ id: "spark-local", name: expect.any(String) }),
  ]);
  // Type agent: absent or "agent" (not terminal, which needs the client's capability).
  expect((init.authMethods![0] as { type?: string }).type ?? "agent").toBe("agent");
  await expect(acp.agent.request("authenticate", { methodId: "spark-local" })).resolves.toEqual({});
  await expect(acp.agent.request("authenticate", { methodId: "github" })).rejects.toThrow(
    /Unknown auth method github/,
  );
});

test("a new session advertises its slash commands and offers mode and model as config options", async () => {
  const created = await acp.agent.request("session/new", { cwd: repo, mcpServers: [] });
  const id = created.sessionId;
  const options = created.configOptions ?? [];
  expect(options.map((o) => o.id)).toEqual(["mode", "model"]);
  expect(options[0]).toMatchObject({ type: "select", currentValue: "default", category: "mode" });
  const model = options[1] as { currentValue: string; options: { value: string }[] };
  expect(model.currentValue).toBe("fast");
  expect(model.options.map((o) => o.value)).toEqual(["fast", "deep"]);

  await acp.until(() => acp.of(id, "available_commands_update").length > 0);
  const [advertised] = acp.of(id, "available_commands_update");
  expect(advertised!.availableCommands.map((c) => c.name)).toEqual([
    "mode",
    "model",
    "undo",
    "compact",
    "review",
  ]);
});

test("set_config_option switches the mode (announced) and the model; a bad value is refused, not clamped", async () => {
  const { sessionId } = await acp.agent.request("session/new", { cwd: repo, mcpServers: [] });
  const planned = await acp.agent.request("session/set_config_option", {
    sessionId,
    configId: "mode",
    value: "plan",
  });
  expect(planned.configOptions[0]).toMatchObject({ id: "mode", currentValue: "plan" });
  await acp.until(() => acp.of(sessionId, "current_mode_update").length > 0);
  expect(acp.of(sessionId, "current_mode_update")[0]!.currentModeId).toBe("plan");

  await acp.agent.request("session/set_config_option", { sessionId, configId: "model", value: "deep" });
  await acp.until(() =>
    acp
      .of(sessionId, "config_option_update")
      .some((u) => u.configOptions.some((o) => o.id === "model" && o.currentValue === "deep")),
  );

  await expect(
    acp.agent.request("session/set_config_option", { sessionId, configId: "model", value: "huge" }),
  ).rejects.toThrow(/Unknown model 'huge'. Available: fast, deep/);
  await expect(
    acp.agent.request("session/set_config_option", { sessionId, configId: "mode", value: "yolo" }),
  ).rejects.toThrow(/Unknown mode yolo/);
  await expect(
    acp.agent.request("session/set_config_option", { sessionId, configId: "effort", value: "high" }),
  ).rejects.toThrow(/Unknown option effort/);
});

test("a slash command is answered without the model; other text, unknown commands included, is a turn", async () => {
  const { sessionId } = await acp.agent.request("session/new", { cwd: repo, mcpServers: [] });
  const say = async (text: string) => {
    const before = acp.text(sessionId).length;
    const { stopReason } = await acp.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text }],
    });
    expect(stopReason).toBe("end_turn");
    return acp.text(sessionId).slice(before);
  };
  expect(await say("/mode plan")).toBe("Mode: plan.");
  expect(await say("/mode")).toBe("Mode: plan. Switch with /mode default or /mode plan.");
  expect(await say("/mode sideways")).toBe("Unknown mode sideways: one of default, plan.");
  expect(await say("/model")).toBe("Model: fast. Available: fast, deep.");
  expect(await say("/model deep")).toBe("Model: deep, from the next turn.");
  expect(await say("/model fast")).toBe("Model: fast, from the next turn.");
  expect(await say("/undo")).toMatch(/Nothing to undo/);
  expect(await say("/compact")).toMatch(/^_Nothing to compact yet: the conversation holds \d+ tokens/);
  expect(await say("/deploy now")).toContain("Answered by the model.");
  // The context meter: ACP's usage_update after the model's response, tokens used of the window.
  await acp.until(() => acp.of(sessionId, "usage_update").length > 0);
  const usage = acp.of(sessionId, "usage_update").at(-1)!;
  expect(usage.used).toBeGreaterThan(0);
  expect(usage.size).toBeGreaterThan(usage.used);
});
