import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig, tierAdmission, userConfigPath } from "./spark-config.js";

async function dirs(user?: string, project?: string) {
  const root = await mkdtemp(path.join(os.tmpdir(), "spark-config-"));
  const cwd = path.join(root, "repo");
  await mkdir(path.join(cwd, ".spark"), { recursive: true });
  const userFile = path.join(root, "user.toml");
  if (user !== undefined) await writeFile(userFile, user);
  if (project !== undefined) await writeFile(path.join(cwd, ".spark", "config.toml"), project);
  return { cwd, userFile, env: { SPARK_CONFIG: userFile } as NodeJS.ProcessEnv };
}

describe("loadConfig", () => {
  it("defaults to one embedded fast tier without files", async () => {
    const { cwd, env } = await dirs();
    const config = await loadConfig({ cwd, env });
    expect(config).toEqual({
      defaultTier: "fast",
      delegateTier: null,
      tiers: { fast: { engine: "llama" } },
      sources: [],
    });
  });

  it("merges the project's file over the user's, tier by tier", async () => {
    const { cwd, env, userFile } = await dirs(
      `[tiers.fast]\nengine = "llama"\nmodel = "hf:a/b/small.gguf"\ncontext = 8192\n\n` +
        `[tiers.deep]\nengine = "upstream"\nurl = "http://gpu:8000/v1"\nmodel = "big"\napi_key_env = "DEEP_KEY"\n`,
      `[tiers.fast]\nengine = "llama"\nmodel = "./tiny.gguf"\n\n[tiers.deep.admission]\nmax_concurrent = 2\n`,
    );
    const config = await loadConfig({ cwd, env });
    expect(config.sources).toEqual([userFile, path.join(cwd, ".spark", "config.toml")]);
    expect(config.defaultTier).toBe("fast");
    expect(config.delegateTier).toBe("deep");
    expect(config.tiers.fast).toEqual({ engine: "llama", model: "./tiny.gguf", context: 8192 });
    expect(config.tiers.deep).toMatchObject({
      engine: "upstream",
      model: "big",
      admission: { max_concurrent: 2 },
    });
    expect(tierAdmission(config)).toEqual({ deep: { maxConcurrent: 2 } });
  });

  it("takes a llama tier's draft model", async () => {
    const { cwd, env } = await dirs(
      `[tiers.fast]\nmodel = "./big.gguf"\ndraft_model = "hf:a/b/small.gguf"\n`,
    );
    const config = await loadConfig({ cwd, env });
    expect(config.tiers.fast).toEqual({
      engine: "llama",
      model: "./big.gguf",
      draft_model: "hf:a/b/small.gguf",
    });
  });

  it("names the file and the field of an invalid value", async () => {
    const { cwd, env, userFile } = await dirs(`[tiers.deep]\nengine = "upstream"\nmodel = "big"\n`);
    await expect(loadConfig({ cwd, env })).rejects.toThrow(`${userFile}: Invalid value at 'tiers.deep.url'`);
    await writeFile(userFile, `[tiers.fast]\nparallel = 0\n`);
    await expect(loadConfig({ cwd, env })).rejects.toThrow(/tiers\.fast\.parallel/);
    await writeFile(userFile, `[tiers.fast\n`);
    await expect(loadConfig({ cwd, env })).rejects.toThrow(`${userFile} is not valid TOML`);
  });

  it("takes an upstream tier's timeouts in ms and refuses values out of range", async () => {
    const deep = `[tiers.deep]\nengine = "upstream"\nurl = "http://gpu:8000/v1"\nmodel = "big"\n`;
    const { cwd, env, userFile } = await dirs(
      `${deep}first_chunk_timeout_ms = 120000\nidle_timeout_ms = 5000\n`,
    );
    expect((await loadConfig({ cwd, env })).tiers.deep).toMatchObject({
      first_chunk_timeout_ms: 120000,
      idle_timeout_ms: 5000,
    });
    for (const bad of [
      "idle_timeout_ms = 0",
      "idle_timeout_ms = 1.5",
      'idle_timeout_ms = "30s"',
      "first_chunk_timeout_ms = 3600001",
    ]) {
      await writeFile(userFile, `${deep}${bad}\n`);
      await expect(loadConfig({ cwd, env })).rejects.toThrow(`tiers.deep.${bad.split(" ")[0]}`);
    }
  });

  it("checks default_tier, delegate_tier and SPARK_TIER against the tiers", async () => {
    const { cwd, env, userFile } = await dirs(`default_tier = "deep"\n[tiers.fast]\n`);
    await expect(loadConfig({ cwd, env })).rejects.toThrow("default_tier 'deep' is not declared");
    await writeFile(userFile, `delegate_tier = "big"\n[tiers.fast]\n`);
    await expect(loadConfig({ cwd, env })).rejects.toThrow("delegate_tier 'big' is not declared");
    await writeFile(userFile, `delegate_tier = "big"\n[tiers.fast]\n[tiers.big]\nengine = "scripted"\n`);
    expect((await loadConfig({ cwd, env })).delegateTier).toBe("big");
    expect((await loadConfig({ cwd, env: { ...env, SPARK_TIER: "big" } })).defaultTier).toBe("big");
    await expect(loadConfig({ cwd, env: { ...env, SPARK_TIER: "nope" } })).rejects.toThrow(
      "SPARK_TIER 'nope'",
    );
  });

  it("finds the user's file under XDG_CONFIG_HOME", () => {
    expect(userConfigPath({ XDG_CONFIG_HOME: "/x" })).toBe(path.join("/x", "spark", "config.toml"));
  });
});
