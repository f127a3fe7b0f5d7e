import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, test } from "vitest";
import {
  startAttachedSpark,
  startWorkspaceServe,
  tmuxSession,
  type WorkspaceServe,
} from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

const term = tmuxSession(`spark-attach-model-test-${process.pid}`);
const { tmux, waitForScreen } = term;

let serve: WorkspaceServe | null = null;
afterAll(async () => {
  term.kill();
  await serve?.stop();
});

const type = (text: string) => {
  tmux("send-keys", "-t", term.name, "-l", text);
  tmux("send-keys", "-t", term.name, "Enter");
};

test("attached, /model lists the server's tiers and switches to another, as in process (it said the host had no others)", async () => {
  // Two tiers; the second loads only on its first use (never here): something to switch to.
  const config = await mkdtemp(path.join(os.tmpdir(), "spark-attach-model-config-"));
  await mkdir(path.join(config, "spark"));
  await writeFile(
    path.join(config, "spark", "config.toml"),
    `default_tier = "fast"\n[diagnostics]\nenabled = false\n[tiers.fast]\nengine = "llama"\n[tiers.deep]\nengine = "llama"\nmodel = "${path.join(config, "deep.gguf")}"\n`,
  );
  serve = await startWorkspaceServe([], { ...testEngineEnv({}), XDG_CONFIG_HOME: config });
  startAttachedSpark(term, serve);
  // One name for the model: its tier, in the status line as in /model.
  await waitForScreen(/ fast · idle/);

  type("/model");
  await waitForScreen(/Model: fast\. Available: fast, deep\. Switch with \/model <name>\./);
  type("/model deep");
  // Said once the host has moved the thread (thread.set_model acked).
  await waitForScreen(/Switched to deep\./);
  await waitForScreen(/ deep · idle/);

  type("/model huge");
  await waitForScreen(/Unknown model 'huge'\. Available: fast, deep\./);
}, 90_000);
