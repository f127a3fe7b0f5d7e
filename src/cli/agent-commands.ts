import { type Command, InvalidArgumentError, Option } from "commander";
import { listSessions, sessionsDir } from "../agent/transcript.js";
import { describeIgnoredSettings, loadConfig } from "../config/spark-config.js";
import { SANDBOX_MODES, type SandboxMode } from "../protocol/agent.js";
import { SparkError } from "../protocol/errors.js";
import { StatusLine } from "../terminal/status-line.js";
import { AgentRuntime, type AgentRuntimeOptions } from "./agent-runtime.js";
import { EXIT_OUTPUT_CLOSED, OutputWatch } from "./closed-output.js";
import { runPlain } from "./tui/plain-output.js";
import { runTui } from "./tui/run-tui.js";

interface AgentFlags {
  model?: string;
  server?: string;
  apiKey?: string;
  allowShell: boolean;
  approval: "ask" | "auto";
  sandbox?: SandboxMode;
  prewarm: boolean;
  engine: "llama" | "scripted";
  cd?: string;
  ctxSize?: number;
  tokensPerSecond?: number;
  json?: boolean;
  last?: boolean;
}

const AGENT_HELP = `
Keys: Enter sends (and steers while the model types), Tab queues, Esc interrupts, /help for more.

Examples:
  $ spark                                  # interactive session in this repository
  $ spark "why does the parser drop the last line?"
  $ spark exec "rename parseLine to parseRow"    # one task, prints the answer, exits
  $ spark exec --json "list the TODOs"           # JSON Lines of every event
  $ spark --server http://gpu-box:8000/v1 --model qwen2.5-coder-32b
  $ spark resume --last

Spark never runs commands or tests unless you ask in that message (or pass --allow-shell), and
then asks before each command unless --approval auto. Commands run in a bubblewrap sandbox:
the workspace writable (not .git or .spark), no network, no keys in the environment (--sandbox).
`;

function addAgentOptions(command: Command): Command {
  return command
    .option(
      "-m, --model <model>",
      "a tier of the config file (e.g. fast, deep), a GGUF path or hf: URI for the embedded engine; with --server, the model id",
    )
    .option(
      "--server <url>",
      "use a Responses-compatible server (e.g. http://host:8080/v1) instead of the embedded engine",
    )
    .option("--api-key <key>", "API key for --server (default: $SPARK_API_KEY, $OPENAI_API_KEY)")
    .option("--allow-shell", "let the agent run commands on every turn, not only when you ask for one", false)
    .addOption(
      new Option("--approval <policy>", "ask before each command, or run them without asking")
        .choices(["ask", "auto"])
        .default("ask"),
    )
    .addOption(
      new Option(
        "--sandbox <mode>",
        'where approved commands run: the workspace writable, no network; the same with network; or no sandbox (default: "sandbox" in config.toml, else workspace-write)',
      ).choices(SANDBOX_MODES),
    )
    .option("--no-prewarm", "do not pre-warm the model with the system prompt at start")
    .addOption(
      new Option("--engine <name>", "embedded engine")
        .choices(["llama", "scripted"])
        .default("llama")
        .hideHelp(),
    )
    .addOption(
      new Option("--tokens-per-second <n>", "scripted engine: emission rate").argParser(Number).hideHelp(),
    )
    .option("-C, --cd <dir>", "workspace directory (default: the current directory)")
    .option(
      "-c, --ctx-size <n>",
      "embedded engine: tokens of context (default: the model's, at most 32768)",
      (v) => {
        const n = Number(v);
        if (!Number.isInteger(n) || n < 1024 || n > 1 << 20)
          throw new InvalidArgumentError("expected a whole number from 1024 to 1048576");
        return n;
      },
    );
}

export function registerAgentCommands(program: Command): void {
  addAgentOptions(program)
    .argument("[prompt...]", "a first message to send")
    .addHelpText("after", AGENT_HELP)
    .action(async (prompt: string[], flags: AgentFlags) => {
      process.exitCode = await interactive(flags, prompt.join(" "));
    });

  addAgentOptions(program.command("exec"))
    .description("run one task non-interactively: prints the final answer (or JSON Lines with --json)")
    .argument("<prompt...>", "the task")
    .option("--json", "print every event as one JSON line", false)
    .action(async (prompt: string[], flags: AgentFlags) => {
      process.exitCode = await exec(flags, prompt.join(" "));
    });

  addAgentOptions(program.command("resume"))
    .description("continue a saved session")
    .argument("[id]", "session id (see the sessions folder)")
    .option("--last", "the most recent session", false)
    .action(async (id: string | undefined, flags: AgentFlags) => {
      process.exitCode = await interactive(flags, "", await findSession(id, flags.last === true));
    });
}

async function startRuntime(flags: AgentFlags, quiet: boolean): Promise<AgentRuntime> {
  let status: StatusLine | null = null;
  const cwd = flags.cd ?? process.cwd();
  // The tiers of ~/.config/spark/config.toml and ./.spark/config.toml describe the embedded
  // runtime; a --server is its own.
  const config = flags.server ? undefined : await loadConfig({ cwd, env: process.env });
  if (config?.ignored) {
    // Non-interactive runs do not guess what the project meant: they stop before contacting
    // anything. The terminal UI goes on without those settings and says so.
    if (quiet) throw new SparkError("invalid_request", describeIgnoredSettings(config.ignored));
    process.stderr.write(`spark: warning: ${describeIgnoredSettings(config.ignored)}\n`);
  }
  const options: AgentRuntimeOptions = {
    cwd,
    ...(config ? { config } : {}),
    ...(flags.model ? { model: flags.model } : {}),
    ...(flags.server ? { server: flags.server } : {}),
    ...(flags.server
      ? { apiKey: flags.apiKey ?? process.env.SPARK_API_KEY ?? process.env.OPENAI_API_KEY }
      : {}),
    engine: flags.engine,
    ...(flags.ctxSize ? { contextSize: flags.ctxSize } : {}),
    ...(flags.tokensPerSecond ? { scripted: { tokensPerSecond: flags.tokensPerSecond } } : {}),
    allowShell: flags.allowShell,
    approval: flags.approval,
    ...(flags.sandbox ? { sandbox: flags.sandbox } : {}),
    prewarm: flags.prewarm,
    onNotice: (message) => process.stderr.write(`spark: ${message}\n`),
    onProgress: quiet
      ? undefined
      : (stage, fraction) => {
          status ??= new StatusLine(stage === "download" ? "Downloading the model" : "Loading the model");
          status.update(fraction);
        },
  };
  const runtime = await AgentRuntime.start(options);
  (status as StatusLine | null)?.done(`Model ready: ${runtime.modelId}`);
  return runtime;
}

async function exec(flags: AgentFlags, prompt: string): Promise<number> {
  if (!prompt.trim())
    throw new SparkError(
      "invalid_request",
      'spark exec needs a task, e.g. spark exec "fix the failing import".',
    );
  // A reader that goes away (`spark exec ... | head -1`) stops the turn quietly.
  using output = new OutputWatch({ stdout: process.stdout, stderr: process.stderr });
  await using runtime = await startRuntime(flags, true);
  const { thread, transcript } = await runtime.newThread();
  const interrupt = new AbortController();
  process.once("SIGINT", () => interrupt.abort());
  const status = await runPlain(thread, {
    input: prompt,
    stdout: process.stdout,
    stderr: output.stderr,
    json: flags.json === true,
    signal: AbortSignal.any([interrupt.signal, output.signal]),
  });
  await transcript.flush();
  if (output.closed) return EXIT_OUTPUT_CLOSED;
  return status === "completed" ? 0 : 1;
}

async function interactive(flags: AgentFlags, prompt: string, resumeFile?: string): Promise<number> {
  if (!process.stdin.isTTY || !process.stdout.isTTY) {
    if (!prompt.trim()) {
      throw new SparkError(
        "invalid_request",
        'Not a terminal: pass the task as an argument, or use spark exec "...".',
      );
    }
    return exec(flags, prompt);
  }
  await using runtime = await startRuntime(flags, false);
  const first = await runtime.newThread(resumeFile);
  // /model NAME switches the current thread's following turns to tier NAME; /new keeps the tier.
  let current = first.thread;
  let model = runtime.modelId;
  const threads = [first.thread];
  await runTui({
    thread: first.thread,
    ...(prompt.trim() ? { prompt: prompt.trim() } : {}),
    modelId: runtime.modelId,
    models: runtime.models,
    onModelChange: async (next) => {
      if (current.busy) {
        current.interrupt();
        await current.whenIdle();
      }
      current.setModel(next);
      model = next;
      return current;
    },
    newThread: async () => {
      current = (await runtime.newThread(undefined, model)).thread;
      threads.push(current);
      return current;
    },
  });
  // Quitting stops the sub-agents still working (quietly: no turn starts for their ends).
  for (const thread of threads) thread.cancelSubAgents();
  await first.transcript.flush();
  return 0;
}

async function findSession(id: string | undefined, last: boolean): Promise<string> {
  const sessions = await listSessions(sessionsDir());
  if (sessions.length === 0) throw new SparkError("not_found", `No saved sessions in ${sessionsDir()}.`);
  if (last || !id) return sessions[0]!.file;
  const match = sessions.find((session) => session.id === id || session.id.startsWith(id));
  if (!match) throw new SparkError("not_found", `No session '${id}' in ${sessionsDir()}.`);
  return match.file;
}
