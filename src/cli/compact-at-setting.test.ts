import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Command } from "commander";
import { describe, expect, test } from "vitest";
import { loadConfig } from "../config/spark-config.js";
import type { ThreadEvent } from "../protocol/agent.js";
import { AgentRuntime } from "../runtime/agent-runtime.js";
import { scriptedTiers } from "../runtime/test-support/scripted-tiers.js";
import { addAgentOptions } from "./agent-commands.js";
import type { AgentFlags } from "./agent-flags.js";

function parse(args: string[]): AgentFlags {
  const command = addAgentOptions(new Command().exitOverride().configureOutput({ writeErr: () => {} }));
  command.parse(args, { from: "user" });
  return command.opts<AgentFlags>();
}

async function withDir<T>(work: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-compact-at-"));
  try {
    return await work(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe("compact_at: when the agent compacts, as a share of the context window", () => {
  test("--compact-at takes a share from 0.1 to 0.95; anything else is refused, not clamped", () => {
    expect(parse(["--compact-at", "0.5"]).compactAt).toBe(0.5);
    expect(parse([]).compactAt).toBeUndefined();
    for (const bad of ["0", "0.05", "0.96", "1", "80%", "", "NaN"])
      expect(() => parse(["--compact-at", bad]), bad).toThrow(/from 0.1 to 0.95/);
  });

  test("compact_at in config.toml is read; out of range it is refused", async () => {
    await withDir(async (dir) => {
      const file = path.join(dir, "config.toml");
      const env = { SPARK_CONFIG: file, SPARK_HOME: dir };
      await writeFile(file, "compact_at = 0.6\n");
      expect((await loadConfig({ cwd: dir, env })).compactAt).toBe(0.6);
      for (const bad of ["compact_at = 0.05", "compact_at = 0.99", 'compact_at = "half"']) {
        await writeFile(file, `${bad}\n`);
        await expect(loadConfig({ cwd: dir, env }), bad).rejects.toMatchObject({ code: "invalid_request" });
      }
    });
  });

  test("the runtime's threads compact at the configured share, and the flag wins over the config", async () => {
    await withDir(async (dir) => {
      const threshold = async (options: { compactAt?: number; config?: number }) => {
        await using runtime = await AgentRuntime.start({
          cwd: dir,
          loadTier: scriptedTiers({ "*": { script: () => ({ text: "ok" }) } }),
          prewarm: false,
          sessionsDir: path.join(dir, ".sessions"),
          ...(options.compactAt === undefined ? {} : { compactAt: options.compactAt }),
          ...(options.config === undefined
            ? {}
            : {
                config: {
                  defaultTier: "fast",
                  delegateTier: null,
                  tiers: { fast: { engine: "llama" } },
                  compactAt: options.config,
                  sources: [],
                },
              }),
        });
        const { thread } = await runtime.newThread();
        const events: ThreadEvent[] = [];
        thread.on((event) => events.push(event));
        await thread.startTurn("hi");
        const update = events.find((event) => event.type === "context.updated");
        if (update?.type !== "context.updated") throw new Error("no context.updated");
        return update.context.compact_at_tokens / update.context.window_tokens;
      };
      expect(await threshold({ config: 0.3 })).toBeCloseTo(0.3, 3);
      expect(await threshold({ config: 0.3, compactAt: 0.4 })).toBeCloseTo(0.4, 3);
    });
  });
});
