import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { type BenchRow, row } from "../bench-report.js";
import { exitOf, stopChild } from "../internal/child-lifetime.js";
import { scriptedSpark, sparkBin } from "../internal/repo-paths.js";
import { median } from "../internal/stats.js";

export interface TuiBenchOptions {
  /** The synthetic SmolLM2-135M shape, for the in-process decode ratio. */
  modelPath: string;
  quick: boolean;
  log: (line: string) => void;
}

/** What the prompt box shows once it is drawn (before and after the agent is ready). */
const PROMPT_BOX = /Type away|Ask Spark/;
/** The last word of the scripted answer the attached rows stream. */
const ANSWER_END = "END-OF-ANSWER";
/** How often the screen is read while waiting for something to show (a terminal has no event). */
const POLL_MS = 5;

/**
 * The terminal's own cost, with the built CLI in real terminals (tmux):
 * - start: `spark --version` and `--help`, and the prompt box of `spark` (its view drawn), against
 *   `node -e 0` (and a node that prints a line, in the same terminal);
 * - attached: CPU of the `spark` process while a `spark serve` (scripted engine) streams an answer
 *   at 100 and 2,000 tokens/s, in cores (from /proc/<pid>/stat);
 * - in-process: decode rate of one agent turn in `spark` (the embedded engine in the same process as
 *   the view) against the same turn in `spark exec`, on the synthetic 135M shape.
 */
export async function tuiScenario(options: TuiBenchOptions): Promise<BenchRow[]> {
  const runs = options.quick ? 5 : 11;
  const home = await mkdtemp(path.join(os.tmpdir(), "spark-bench-tui-"));
  try {
    const env = await isolatedEnv(home);
    const rows = [...startRows(runs, env), await promptBoxRow(options.quick ? 3 : 5, home, env)];
    for (const rate of [100, 2000]) rows.push(await attachedCpuRow(rate, options, home, env));
    rows.push(await decodeRatioRow(options, home, env));
    return rows;
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

/** Server state and sessions in a folder of their own: no real `spark serve` is attached to. */
async function isolatedEnv(home: string): Promise<NodeJS.ProcessEnv> {
  const { SPARK_HOME: _, SPARK_API_KEY: __, ...inherited } = process.env;
  return {
    ...inherited,
    XDG_STATE_HOME: await mkdtemp(path.join(home, "state-")),
    SPARK_SESSIONS_DIR: await mkdtemp(path.join(home, "sessions-")),
  };
}

function startRows(runs: number, env: NodeJS.ProcessEnv): BenchRow[] {
  const wall = (args: string[]) => {
    // The first run fills the compile cache; it is not counted.
    spawnSync(process.execPath, args, { env, stdio: "ignore" });
    const times: number[] = [];
    for (let i = 0; i < runs; i++) {
      const started = performance.now();
      const { status } = spawnSync(process.execPath, args, { env, stdio: "ignore" });
      if (status !== 0) throw new Error(`bench: node ${args.join(" ")} exited with ${status}`);
      times.push(performance.now() - started);
    }
    return median(times);
  };
  const node = wall(["-e", "0"]);
  return (["--version", "--help"] as const).map((flag) => {
    const spark = wall([sparkBin(), flag]);
    return row(
      {
        scenario: "tui",
        metric: `start: spark ${flag} vs node -e 0`,
        value: spark,
        baseline: node,
        unit: "ms",
        target: "<= +150 ms",
        detail: `median of ${runs}; ${(spark - node).toFixed(0)} ms over node's own start`,
      },
      () => spark - node <= 150,
    );
  });
}

/** From starting `spark` in a terminal to its prompt box on the screen, against a node printing a line. */
async function promptBoxRow(runs: number, home: string, env: NodeJS.ProcessEnv): Promise<BenchRow> {
  const workspace = await mkdtemp(path.join(home, "workspace-"));
  const shown = async (command: string) => {
    const times: number[] = [];
    for (let i = 0; i <= runs; i++) {
      await using term = await Terminal.open(command, workspace, env);
      const started = performance.now();
      await term.waitFor(PROMPT_BOX, POLL_MS);
      // The first run fills the compile cache; it is not counted.
      if (i > 0) times.push(performance.now() - started - term.startMs);
    }
    return median(times);
  };
  const node = await shown(
    `exec "${process.execPath}" -e "process.stdout.write('Ask Spark'); setInterval(() => {}, 1e6)"`,
  );
  // The scripted engine (the test entry point of a checkout): no model load in the way.
  const scripted = await scriptedSpark();
  const engineEnv = Object.entries(scripted.env({}))
    .map(([name, value]) => `${name}='${value}'`)
    .join(" ");
  const spark = await shown(`${engineEnv} exec "${process.execPath}" "${scripted.bin}" --no-attach`);
  return row(
    {
      scenario: "tui",
      metric: "start: spark's prompt box on screen vs node printing a line",
      value: spark,
      baseline: node,
      unit: "ms",
      target: "<= +500 ms",
      detail: `tmux, median of ${runs}; ${(spark - node).toFixed(0)} ms over node's`,
    },
    () => spark - node <= 500,
  );
}

/**
 * CPU of an attached `spark` while `spark serve` streams a scripted answer at `rate` tokens/s (about
 * 5 s of it), in cores: CPU time over wall time, from the message sent to its last word on screen.
 */
async function attachedCpuRow(
  rate: number,
  options: TuiBenchOptions,
  home: string,
  env: NodeJS.ProcessEnv,
): Promise<BenchRow> {
  const tokens = rate * (options.quick ? 3 : 5);
  const workspace = await mkdtemp(path.join(home, "workspace-"));
  execFileSync("git", ["init", "-q"], { cwd: workspace });
  const script = path.join(home, `answer-${rate}.json`);
  await writeFile(script, JSON.stringify([{ text: markdownAnswer(tokens) }]));
  // The server on the scripted engine (the test entry point of a checkout); the face measured is
  // the shipped bin/spark.js.
  const scripted = await scriptedSpark();
  await using serve = await ServeProcess.start(
    [],
    workspace,
    { ...env, ...scripted.env({ script, tokensPerSecond: rate }) },
    scripted.bin,
  );
  await using term = await Terminal.open(`exec "${process.execPath}" "${sparkBin()}" attach`, workspace, env);
  await term.waitFor(/Ask Spark/, 50);
  const cpu = new ProcessCpu(term.pid);
  const serverCpu = new ProcessCpu(serve.pid);
  const started = performance.now();
  const before = cpu.ms();
  const serverBefore = serverCpu.ms();
  term.type("stream the answer");
  await term.waitFor(new RegExp(ANSWER_END), 50, 120_000);
  const wallMs = performance.now() - started;
  const cores = (cpu.ms() - before) / wallMs;
  const serverCores = (serverCpu.ms() - serverBefore) / wallMs;
  options.log(`tui attached ${rate} tok/s: spark ${cores.toFixed(2)} cores, serve ${serverCores.toFixed(2)}`);
  // 2,000 tok/s: 0.3 of a core at most; 100 tok/s: half that.
  const limit = rate >= 2000 ? 0.3 : 0.15;
  return row(
    {
      scenario: "tui",
      metric: `attached: spark's CPU while ${rate} tok/s stream, vs one core`,
      value: cores,
      baseline: 1,
      unit: "cores",
      target: `<= ${limit}x`,
      detail: `${tokens} tokens in ${(wallMs / 1000).toFixed(1)} s: ${((cores * wallMs * 1000) / tokens).toFixed(0)} µs of spark's CPU per token; the server used ${serverCores.toFixed(2)} cores`,
    },
    (ratio) => ratio <= limit,
  );
}

/**
 * One agent turn on the synthetic 135M shape (random weights: it writes until stopped), decoded in
 * `spark` (the view in the same process as the engine) and in `spark exec`: the rate each face
 * measures (deltas per second since the first), after the same stretch of decoding.
 */
async function decodeRatioRow(
  options: TuiBenchOptions,
  home: string,
  env: NodeJS.ProcessEnv,
): Promise<BenchRow> {
  const decodeMs = options.quick ? 6_000 : 15_000;
  const workspace = await mkdtemp(path.join(home, "workspace-"));
  execFileSync("git", ["init", "-q"], { cwd: workspace });
  const question = "Describe this repository.";
  const agentArgs = ["--no-attach", "--model", options.modelPath, "--ctx-size", "8192"];
  const exec = await execRate(
    [sparkBin(), "exec", "--json", ...agentArgs, question],
    workspace,
    env,
    decodeMs,
  );
  const quoted = agentArgs.map((arg) => `"${arg}"`).join(" ");
  await using term = await Terminal.open(
    `exec "${process.execPath}" "${sparkBin()}" ${quoted} "${question}"`,
    workspace,
    env,
  );
  await term.waitFor(/streaming/, 50, 300_000);
  await delay(decodeMs);
  const screen = await term.waitFor(/~[\d.]+ tok\/s/, 50);
  const tui = Number(
    /~([\d.]+) tok\/s/.exec(screen.split("\n").findLast((line) => /tok\/s/.test(line)) ?? "")?.[1],
  );
  options.log(`tui in-process decode: spark ${tui.toFixed(1)} tok/s, spark exec ${exec.toFixed(1)} tok/s`);
  return row(
    {
      scenario: "tui",
      metric: "in-process: one agent turn's decode rate in spark vs spark exec (135M shape)",
      value: tui,
      baseline: exec,
      unit: "tok/s",
      target: ">= 0.95x",
      detail: `rates after ${(decodeMs / 1000).toFixed(0)} s of decoding, as each face measures them`,
    },
    (ratio) => ratio >= 0.95,
  );
}

/** `spark exec --json`'s decode rate (item deltas per second since the first) after `decodeMs`. */
async function execRate(
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  decodeMs: number,
): Promise<number> {
  const child = spawn(process.execPath, args, { cwd, env, stdio: ["ignore", "pipe", "ignore"] });
  const exited = exitOf(child);
  let first: number | null = null;
  let last = 0;
  let deltas = 0;
  let buffered = "";
  const done = new Promise<void>((resolve) => {
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split("\n");
      buffered = lines.pop()!;
      for (const line of lines) {
        if (!line.includes('"item.delta"')) continue;
        const now = performance.now();
        first ??= now;
        last = now;
        deltas++;
        if (now - first >= decodeMs) resolve();
      }
    });
    void exited.then(() => resolve());
  });
  await done;
  await stopChild(child, exited);
  if (first === null || deltas < 2) throw new Error("bench: spark exec streamed no answer");
  return ((deltas - 1) * 1000) / (last - first);
}

/** An answer of `tokens` scripted tokens (words): Markdown paragraphs, a list and a code block. */
function markdownAnswer(tokens: number): string {
  const words: string[] = [];
  for (let i = 0; words.length < tokens - 1; i++) {
    const line = i % 12;
    const text =
      line === 0
        ? `## Part ${i / 12 + 1}`
        : line < 5
          ? `The **parser** reads \`line ${i}\` and keeps the rest for later, so nothing is lost.`
          : line < 8
            ? `- item ${i}: a point about the *stream*`
            : line === 8
              ? "```ts"
              : line < 11
                ? `const value${i} = compute(${i});`
                : "```";
    words.push(...text.split(" ").map((word, at) => (at === 0 && words.length > 0 ? `\n${word}` : word)));
  }
  return `${words.slice(0, tokens - 1).join(" ")} ${ANSWER_END}`;
}

/** CPU time (user + system, all threads) of a process so far, in ms, from `/proc/<pid>/stat`. */
class ProcessCpu {
  private readonly ticksPerSecond =
    Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;

  constructor(private readonly pid: number) {}

  ms(): number {
    const stat = readFileSync(`/proc/${this.pid}/stat`, "utf8");
    // utime and stime: fields 14 and 15, counted after the parenthesised command name (field 2).
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / this.ticksPerSecond;
  }
}

/** A command in a detached tmux session of 120x40, as a person's terminal runs it. */
class Terminal implements AsyncDisposable {
  private static sessions = 0;

  private constructor(
    private readonly name: string,
    /** The process the session runs (`exec` in the command makes it the pane's own process). */
    readonly pid: number,
    /** How long tmux took to start the session, not counted against the command. */
    readonly startMs: number,
  ) {}

  static async open(command: string, cwd: string, env: NodeJS.ProcessEnv): Promise<Terminal> {
    const name = `spark-bench-tui-${process.pid}-${++Terminal.sessions}`;
    const envArgs = ["XDG_STATE_HOME", "SPARK_SESSIONS_DIR"].flatMap((key) => ["-e", `${key}=${env[key]}`]);
    const started = performance.now();
    tmux(
      "new-session",
      "-d",
      "-s",
      name,
      "-x",
      "120",
      "-y",
      "40",
      "-c",
      cwd,
      "-e",
      "CI=false",
      "-e",
      "SPARK_HOME=",
      ...envArgs,
      command,
    );
    const pid = Number(tmux("display-message", "-p", "-t", name, "#{pane_pid}").trim());
    return new Terminal(name, pid, performance.now() - started);
  }

  /** Polls the screen (and 2,000 lines of scrollback) until `pattern` shows; resolves with it. */
  async waitFor(pattern: RegExp, pollMs: number, timeoutMs = 30_000): Promise<string> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const screen = tmux("capture-pane", "-p", "-t", this.name, "-S", "-2000");
      if (pattern.test(screen)) return screen;
      if (performance.now() > deadline)
        throw new Error(`bench: timed out waiting for ${pattern}:\n${screen}`);
      await delay(pollMs);
    }
  }

  /** Types `text` and Enter. */
  type(text: string): void {
    tmux("send-keys", "-t", this.name, "-l", text);
    tmux("send-keys", "-t", this.name, "Enter");
  }

  async [Symbol.asyncDispose](): Promise<void> {
    try {
      tmux("kill-session", "-t", this.name);
    } catch {
      // Already gone.
    }
  }
}

function tmux(...args: string[]): string {
  return execFileSync("tmux", args, { encoding: "utf8" });
}

/** `spark serve --port 0` in `cwd`, started as a person would (it writes its state file there). */
class ServeProcess implements AsyncDisposable {
  private constructor(
    private readonly child: ChildProcess,
    private readonly exited: Promise<void>,
  ) {}

  static async start(
    args: string[],
    cwd: string,
    env: NodeJS.ProcessEnv,
    bin = sparkBin(),
  ): Promise<ServeProcess> {
    const child = spawn(process.execPath, [bin, "serve", ...args, "--port", "0"], {
      cwd,
      env,
      stdio: ["ignore", "ignore", "pipe"],
    });
    const exited = exitOf(child);
    let stderr = "";
    await new Promise<void>((resolve, reject) => {
      child.stderr!.setEncoding("utf8");
      child.stderr!.on("data", (text: string) => {
        stderr += text;
        if (stderr.includes("Press Ctrl+C")) resolve();
      });
      void exited.then(() => reject(new Error(`bench: spark serve exited:\n${stderr}`)));
    });
    return new ServeProcess(child, exited);
  }

  get pid(): number {
    return this.child.pid!;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await stopChild(this.child, this.exited);
  }
}
