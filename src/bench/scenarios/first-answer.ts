import { execFileSync, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { getLlama, LlamaLogLevel, resolveChatWrapper } from "node-llama-cpp";
import { renderPrompt } from "../../engine/llama/internal/chat-rendering.js";
import { physicalCoreCount } from "../../engine/llama/internal/physical-cores.js";
import { withSparkCallSyntax } from "../../engine/llama/internal/tool-call-syntax.js";
import { defaultAgentPrompt } from "../agent-prompt-size.js";
import { type BenchRow, infoRow, row } from "../bench-report.js";
import { exitOf, stopChild } from "../internal/child-lifetime.js";
import { streamCompletion } from "../internal/completion-stream.js";
import type { LlamaServerLookup } from "../internal/llama-server-binary.js";
import { PeerServer } from "../internal/peer-server.js";
import { sparkBin } from "../internal/repo-paths.js";
import { median } from "../internal/stats.js";

export interface FirstAnswerOptions {
  models: { label: string; path: string }[];
  /** `findLlamaServer()`: without a binary the rows against llama-server say "n/a". */
  llamaServer: LlamaServerLookup;
  contextSize: number;
  /** Cold and warm launches of each model (each cold one in a new HOME and workspace). */
  runs: number;
  log: (line: string) => void;
}

const QUESTION = "What does this repository do? Answer in one line.";
const OUTPUT_TOKENS = 16;
/** A cold start evaluates the whole agent prompt: minutes on a slow CPU and a large model. */
const LAUNCH_TIMEOUT_MS = 600_000;

/**
 * What a new user waits for: `spark exec` launched in a fresh workspace with a fresh HOME (nothing
 * saved: the agent prompt is evaluated at model load) until its first answer token, then launched
 * again there (the prompt's saved KV state restored), against llama-server launched on the same
 * GGUF, threads and context until the first token of the same prompt (the agent's system prompt
 * and tools, and the question). Client-side, from spawning the process.
 */
export async function firstAnswerScenario(options: FirstAnswerOptions): Promise<BenchRow[]> {
  const peerBin = "binary" in options.llamaServer ? options.llamaServer.binary : undefined;
  if ("missing" in options.llamaServer) {
    options.log(`first-answer: rows against llama-server without a baseline: ${options.llamaServer.missing}`);
  }
  const rows: BenchRow[] = [];
  for (const model of options.models) {
    const cold: number[] = [];
    const warm: number[] = [];
    const peer: number[] = [];
    let promptTokens = 0;
    for (let i = 0; i < options.runs; i++) {
      const home = await mkdtemp(path.join(os.tmpdir(), "spark-bench-home-"));
      const workspace = await mkdtemp(path.join(os.tmpdir(), "spark-bench-ws-"));
      execFileSync("git", ["init", "-q"], { cwd: workspace });
      try {
        cold.push(await sparkFirstAnswer(model.path, home, workspace, options.contextSize));
        warm.push(await sparkFirstAnswer(model.path, home, workspace, options.contextSize));
        if (peerBin) {
          const first = await peerFirstToken(
            peerBin,
            model.path,
            workspace,
            options.contextSize,
            options.log,
          );
          peer.push(first.ms);
          promptTokens = first.promptTokens;
        }
      } finally {
        await rm(home, { recursive: true, force: true });
        await rm(workspace, { recursive: true, force: true });
      }
      options.log(
        `first-answer ${model.label} run ${i + 1}/${options.runs}: cold ${cold.at(-1)!.toFixed(0)} ms, ` +
          `warm ${warm.at(-1)!.toFixed(0)} ms, llama-server ${peer.at(-1)?.toFixed(0) ?? "n/a"} ms`,
      );
    }
    const baseline = peer.length > 0 ? median(peer) : Number.NaN;
    const sent =
      promptTokens > 0 ? `; llama-server sent the same ${promptTokens} prompt tokens as raw /completion` : "";
    const detail = `spark exec, ${options.contextSize} tokens of context; median of ${options.runs}${sent}`;
    rows.push(
      infoRow({
        scenario: "first-answer",
        metric: `launch -> first answer token, fresh HOME and workspace (cold) vs llama-server launch -> first token, ${model.label}`,
        value: median(cold),
        baseline,
        unit: "ms",
        detail,
      }),
      // Warm: the agent prompt's KV state restored from disk; llama-server evaluates it every launch.
      row(
        {
          scenario: "first-answer",
          metric: `launch -> first answer token, again (warm) vs llama-server launch -> first token, ${model.label}`,
          value: median(warm),
          baseline,
          unit: "ms",
          target: "<= 1.0x",
          detail,
        },
        (ratio) => ratio <= 1,
      ),
    );
  }
  return rows;
}

/**
 * Launches `spark exec` in `workspace` with `home` as HOME (and no cache or config directories of
 * this user's): milliseconds to the first answer token (the first event of the agent's output).
 */
async function sparkFirstAnswer(
  modelPath: string,
  home: string,
  workspace: string,
  contextSize: number,
): Promise<number> {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home };
  for (const name of ["XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"])
    delete env[name];
  for (const name of ["SPARK_HOME", "SPARK_MODELS_DIR", "SPARK_KV_CACHE_BYTES"]) delete env[name];
  // The engine's build is installed once, not part of a start.
  env.SPARK_ENGINE_CACHE =
    process.env.SPARK_ENGINE_CACHE || path.join(os.homedir(), ".cache", "spark", "engine");
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [
      sparkBin(),
      ...["exec", "--json", "--no-attach", "--model", modelPath, "--ctx-size", String(contextSize)],
      ...["--max-output-tokens", String(OUTPUT_TOKENS), QUESTION],
    ],
    { cwd: workspace, env, stdio: ["ignore", "pipe", "pipe"] },
  );
  const exited = exitOf(child);
  let stderr = "";
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (text: string) => {
    stderr = (stderr + text).slice(-4000);
  });
  try {
    const first = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no answer in time")), LAUNCH_TIMEOUT_MS);
      const lines = createInterface({ input: child.stdout! });
      lines.on("line", (line) => {
        if (!isAnswerStart(line)) return;
        clearTimeout(timer);
        resolve(performance.now() - started);
      });
      void exited.then(() => {
        clearTimeout(timer);
        reject(new Error(`exited with ${child.exitCode} before answering`));
      });
    });
    await exited;
    return first;
  } catch (error) {
    throw new Error(`bench: spark exec: ${(error as Error).message}\n${stderr}`);
  } finally {
    await stopChild(child, exited);
  }
}

/** Whether a `spark exec --json` line is the agent's first output: text, reasoning or a tool call. */
function isAnswerStart(line: string): boolean {
  try {
    const event = JSON.parse(line) as { type?: string; item?: { type?: string } };
    if (event.type === "item.delta") return true;
    return event.type === "item.started" && event.item?.type !== "user_message";
  } catch {
    return false;
  }
}

/**
 * Launches llama-server and sends it the prompt Spark evaluates, token for token (the agent's
 * system prompt and tools as Spark renders them for this model, and the question), as a raw
 * `/completion` with nothing cached: milliseconds to its first output token. Not through its Chat
 * Completions and `--jinja`: a template without tools (SmolLM2's) would leave the tool list out and
 * time a prompt a tenth as long.
 */
async function peerFirstToken(
  binary: string,
  modelPath: string,
  workspace: string,
  contextSize: number,
  log: (line: string) => void,
): Promise<{ ms: number; promptTokens: number }> {
  const tokens = await renderedAgentRequest(modelPath, workspace);
  const started = performance.now();
  await using peer = await PeerServer.start({
    binary,
    modelPath,
    contextSize,
    threads: physicalCoreCount(),
  });
  const streamed = await streamCompletion(peer.baseUrl, tokens, OUTPUT_TOKENS);
  if (streamed.promptTokens > 0 && Math.abs(streamed.promptTokens - tokens.length) > 1) {
    log(
      `first-answer: llama-server evaluated ${streamed.promptTokens} prompt tokens of ${tokens.length} sent`,
    );
  }
  return { ms: streamed.firstAt - started, promptTokens: tokens.length };
}

/** The first request of a session in `workspace`, in the model's tokens as the engine renders it. */
async function renderedAgentRequest(modelPath: string, workspace: string): Promise<number[]> {
  const prompt = defaultAgentPrompt(workspace);
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
  try {
    const model = await llama.loadModel({ modelPath, vocabOnly: true });
    const wrapper = withSparkCallSyntax(resolveChatWrapper(model));
    const messages = [
      { role: "system" as const, content: prompt.instructions },
      { role: "user" as const, content: QUESTION },
    ];
    return [...renderPrompt(model, wrapper, messages, prompt.tools).tokens];
  } finally {
    await llama.dispose();
  }
}
