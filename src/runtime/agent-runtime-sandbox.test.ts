import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, test } from "vitest";
import type { ResolvedConfig } from "../config/spark-config.js";
import type { GenerateRequest } from "../engine/engine.js";
import type { ScriptedReply } from "../engine/scripted/scripted-engine.js";
import type { SandboxMode, ThreadEvent } from "../protocol/agent.js";
import { AgentRuntime, type AgentRuntimeOptions } from "./agent-runtime.js";
import { scriptedTiers } from "./test-support/scripted-tiers.js";

/** Asks to run `echo hi` once, then answers. */
function script(request: GenerateRequest): ScriptedReply {
  if (request.messages.at(-1)?.role === "tool") return { text: "Done." };
  return { toolCalls: [{ name: "shell", arguments: JSON.stringify({ command: "echo hi" }) }] };
}

/** The sandbox mode the approval request of a thread's first command carries. */
async function approvalSandbox(options: Partial<AgentRuntimeOptions>): Promise<SandboxMode> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-runtime-sandbox-"));
  try {
    await using runtime = await AgentRuntime.start({
      cwd: dir,
      loadTier: scriptedTiers({ "*": { script } }),
      prewarm: false,
      sessionsDir: path.join(dir, ".sessions"),
      ...options,
    });
    const { thread, transcript } = await runtime.newThread();
    const requested = new Promise<Extract<ThreadEvent, { type: "approval.requested" }>>((resolve) => {
      thread.on((event) => {
        if (event.type === "approval.requested") {
          thread.respondToApproval(event.approval_id, false);
          resolve(event);
        }
      });
    });
    await thread.startTurn("run echo hi");
    await transcript.flush();
    const request = await requested;
    if (request.kind !== "shell") throw new Error(`expected a shell approval, got ${request.kind}`);
    expect(runtime.sandboxMode).toBe(request.sandbox);
    return request.sandbox;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const config = (sandbox?: SandboxMode): ResolvedConfig => ({
  defaultTier: "fast",
  delegateTier: null,
  tiers: { fast: { engine: "llama" } },
  ...(sandbox ? { sandbox } : {}),
  sources: [],
});

describe("the runtime's sandbox mode", () => {
  test("defaults to workspace-write, shown with each approval request", async () => {
    expect(await approvalSandbox({})).toBe("workspace-write");
  });

  test("comes from the config file, and --sandbox overrides it", async () => {
    expect(await approvalSandbox({ config: config("workspace-write-network") })).toBe(
      "workspace-write-network",
    );
    expect(
      await approvalSandbox({ config: config("workspace-write-network"), sandbox: "danger-full-access" }),
    ).toBe("danger-full-access");
  });
});
