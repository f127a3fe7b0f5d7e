import path from "node:path";
import { type Command, InvalidArgumentError, Option } from "commander";
import { listSessions, sessionsDir } from "../agent/transcript.js";
import { HostClient } from "../client-core/host-client.js";
import { nodeSocketFactory } from "../client-core/node-socket.js";
import { listServerStates } from "../config/server-state.js";
import { type LoadedConfig, loadConfig } from "../config/spark-config.js";
import { SANDBOX_MODES, type SandboxMode } from "../protocol/agent.js";
import type { TurnToolChoice } from "../protocol/agent-requests.js";
import { SparkError } from "../protocol/errors.js";
import { StatusLine } from "../terminal/status-line.js";
import type { AgentRuntimeOptions } from "./agent-runtime.js";
import { EXIT_OUTPUT_CLOSED, OutputWatch } from "./closed-output.js";
import { HostThread } from "./host-thread.js";
import { integer } from "./integer-option.js";
import { keyFromFlags } from "./key-flags.js";
import { LocalAgentHost } from "./local-agent-host.js";
import { trustedConfig } from "./trusted-config.js";
import { runPlain } from "./tui/plain-output.js";
import { runTui } from "./tui/run-tui.js";
import { StartupStatus } from "./tui/startup-status.js";
import { agentHostUrl, findWorkspaceServer } from "./workspace-server.js";

interface AgentFlags {
  model?: string;
  server?: string;
  apiKey?: string;
  apiKeyFile?: string;
  approval: "ask" | "auto";
  sandbox?: SandboxMode;
  prewarm: boolean;
  cd?: string;
  ctxSize?: number;
  maxToolRounds?: number;
  json?: boolean;
  toolChoice?: TurnToolChoice;
  plan?: boolean;
  last?: boolean;
  /** False with `--no-attach`. */
  attach: boolean;
}

/** An agent host to attach to: its WebSocket address and key. */
interface HostTarget {
  url: string;
  key: string | null;
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

The agent may ask to run a command on any turn; each one shows the command, its directory and
sandbox, and runs only once you approve it (or without asking, with --approval auto). Commands run
in a bubblewrap sandbox: the workspace writable (not .git or .spark), no network, no keys in the
environment (--sandbox).
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
    .option(
      "--api-key-file <file>",
      "a file holding the key for --server (default: $SPARK_API_KEY, $OPENAI_API_KEY)",
    )
    .option("--api-key <key>", "the key for --server on the command line, visible in ps (prefer the above)")
    .addOption(
      new Option(
        "--approval <policy>",
        "ask before each command and untrusted MCP call, or run them without asking",
      )
        .choices(["ask", "auto"])
        .default("ask"),
    )
    .addOption(
      new Option(
        "--sandbox <mode>",
        'where approved commands run: the workspace writable, no network; the same with network; or no sandbox (default: "sandbox" in config.toml, else workspace-write)',
      ).choices(SANDBOX_MODES),
    )
    .option(
      "--max-tool-rounds <n>",
      "rounds of tool calls one turn may run before it stops (default: max_tool_rounds in config.toml, else 50)",
      integer(1, 10_000),
    )
    .option("--no-prewarm", "do not pre-warm the model with the system prompt at start")
    .option("-C, --cd <dir>", "workspace directory (default: the current directory)")
    .option(
      "--no-attach",
      "run the agent in this process even when a spark serve of yours runs for this workspace",
    )
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
    .option(
      "--tool-choice <choice>",
      'the first model response must call a tool ("required") or the tool named (e.g. list_dir); later ones choose freely (default: auto)',
      toolChoiceOption,
    )
    .option("--plan", "plan mode: edits and commands are refused, the answer is a plan", false)
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

  program
    .command("attach")
    .description(
      "open the newest session of this workspace on a running spark serve (or start one there), live in every face",
    )
    .argument("[url]", "the server (http://HOST:PORT; default: your spark serve for this workspace)")
    .option(
      "--api-key-file <file>",
      "a file holding the server's key (default: from your server state file, else $SPARK_API_KEY)",
    )
    .option("--api-key <key>", "the server's key on the command line, visible in ps (prefer the above)")
    .option("-C, --cd <dir>", "workspace directory (default: the current directory)")
    .action(async (url: string | undefined, flags: { apiKey?: string; apiKeyFile?: string; cd?: string }) => {
      const cwd = flags.cd ?? process.cwd();
      const apiKey = keyFromFlags(
        { key: flags.apiKey, file: flags.apiKeyFile },
        { flag: "--api-key", fileFlag: "--api-key-file", env: [] },
      );
      const target = await attachUrl(url, cwd, apiKey);
      process.exitCode = await interactiveAttached(target, { newest: path.resolve(cwd) }, "");
    });
}

/**
 * The running `spark serve` of this user for the workspace, when the flags leave the choice to
 * Spark: flags that set up the agent (a model, a server, a policy, a sandbox) need an agent of
 * this process, and `--no-attach` asks for one.
 */
async function attachTarget(flags: AgentFlags): Promise<HostTarget | null> {
  const ownAgent =
    !flags.attach ||
    flags.model !== undefined ||
    flags.server !== undefined ||
    flags.approval !== "ask" ||
    flags.maxToolRounds !== undefined ||
    flags.sandbox !== undefined ||
    flags.ctxSize !== undefined ||
    !flags.prewarm;
  if (ownAgent) return null;
  const state = await findWorkspaceServer(flags.cd ?? process.cwd());
  return state ? { url: agentHostUrl(state.url), key: state.key } : null;
}

/** `spark attach [URL]`: the server named (its key from the state file when it is this user's). */
async function attachUrl(
  url: string | undefined,
  cwd: string,
  apiKey: string | undefined,
): Promise<HostTarget> {
  if (!url) {
    const state = await findWorkspaceServer(cwd);
    if (!state)
      throw new SparkError(
        "not_found",
        `No spark serve of yours runs for ${path.resolve(cwd)}; start one there, or pass its URL.`,
      );
    return { url: agentHostUrl(state.url), key: apiKey ?? state.key };
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new SparkError("invalid_request", `Not a URL: ${url} (expected http://HOST:PORT).`);
  }
  if (!["http:", "https:", "ws:", "wss:"].includes(parsed.protocol))
    throw new SparkError("invalid_request", `Not an http(s) or ws(s) URL: ${url}.`);
  const base = `${parsed.protocol.replace(/^ws/, "http")}//${parsed.host}`;
  // The key of this user's running server at that address, if there is one.
  const local = (await listServerStates()).find((state) => state.url.replace(/\/+$/, "") === base);
  return { url: agentHostUrl(base), key: apiKey ?? local?.key ?? process.env.SPARK_API_KEY ?? null };
}

/**
 * How a start reports: `exec` refuses an untrusted project's settings and shows progress only on a
 * terminal's stderr; the terminal UI asks whether to trust the project and shows progress itself.
 */
type StartReporting =
  | { mode: "exec" }
  | { mode: "interactive"; startup: StartupStatus; signal: AbortSignal; config: LoadedConfig };

async function startLocalHost(flags: AgentFlags, reporting: StartReporting): Promise<LocalAgentHost> {
  const cwd = flags.cd ?? process.cwd();
  // Read with a remote model too: its MCP servers, sandbox and limits are the person's own.
  const config = await trustedConfig(cwd, {
    remoteModel: flags.server !== undefined,
    ...(reporting.mode === "interactive"
      ? { startup: reporting.startup, signal: reporting.signal, loaded: reporting.config }
      : {}),
  });
  let status: StatusLine | null = null;
  const onProgress: AgentRuntimeOptions["onProgress"] =
    reporting.mode === "interactive"
      ? (stage, fraction) =>
          reporting.startup.set({ phase: stage === "download" ? "downloading" : "loading", fraction })
      : process.stderr.isTTY
        ? (stage, fraction) => {
            status ??= new StatusLine(stage === "download" ? "Downloading the model" : "Loading the model");
            status.update(fraction);
          }
        : undefined;
  const options: AgentRuntimeOptions = {
    cwd,
    config,
    ...(flags.model ? { model: flags.model } : {}),
    ...(flags.server ? { server: flags.server } : {}),
    ...(flags.server
      ? {
          apiKey: keyFromFlags(
            { key: flags.apiKey, file: flags.apiKeyFile },
            { flag: "--api-key", fileFlag: "--api-key-file", env: ["SPARK_API_KEY", "OPENAI_API_KEY"] },
          ),
        }
      : {}),
    ...(flags.ctxSize ? { contextSize: flags.ctxSize } : {}),
    approval: flags.approval,
    ...(flags.maxToolRounds ? { maxToolRounds: flags.maxToolRounds } : {}),
    ...(flags.sandbox ? { sandbox: flags.sandbox } : {}),
    prewarm: flags.prewarm,
    onNotice: (message) => process.stderr.write(`spark: ${message}\n`),
    ...(onProgress ? { onProgress } : {}),
  };
  const local = await LocalAgentHost.start(options);
  const compute = local.runtime.compute;
  (status as StatusLine | null)?.done(
    `Model ready: ${local.runtime.modelId}${compute ? ` (${compute})` : ""}`,
  );
  return local;
}

/**
 * Starts the agent (model load, pre-warm) behind its in-memory agent host, and the first thread
 * (a saved session's, with `resumeId`), while the terminal UI already takes input.
 */
async function startSession(
  flags: AgentFlags,
  startup: StartupStatus,
  signal: AbortSignal,
  resumeId: string | undefined,
  config: LoadedConfig,
): Promise<{ local: LocalAgentHost; client: HostClient; first: HostThread }> {
  try {
    const local = await startLocalHost(flags, { mode: "interactive", startup, signal, config });
    // Quitting while it warms up closes the runtime at once: the pre-warm stops with it.
    const onQuit = () => void local.dispose();
    signal.addEventListener("abort", onQuit, { once: true });
    let client: HostClient | null = null;
    try {
      signal.throwIfAborted();
      startup.set({ phase: "warming" });
      client = await local.connect();
      const first = await HostThread.open(client, resumeId);
      signal.throwIfAborted();
      startup.set({ phase: "ready" });
      return { local, client, first };
    } catch (error) {
      client?.dispose();
      await local.dispose();
      throw error;
    } finally {
      signal.removeEventListener("abort", onQuit);
    }
  } catch (error) {
    startup.set({ phase: "failed", message: error instanceof Error ? error.message : String(error) });
    throw error;
  }
}

function toolChoiceOption(value: string): TurnToolChoice {
  if (value === "auto" || value === "required") return value;
  if (!/^[\w.:-]{1,128}$/.test(value))
    throw new InvalidArgumentError('expected "auto", "required" or a tool name such as list_dir');
  return { name: value };
}

async function exec(flags: AgentFlags, prompt: string): Promise<number> {
  if (!prompt.trim())
    throw new SparkError(
      "invalid_request",
      'spark exec needs a task, e.g. spark exec "fix the failing import".',
    );
  const target = await attachTarget(flags);
  // A reader that goes away (`spark exec ... | head -1`) stops the turn quietly.
  using output = new OutputWatch({ stdout: process.stdout, stderr: process.stderr });
  if (target) {
    // On a running `spark serve`: the task is a thread there, live in the web app and the editor;
    // commands that need approval wait for an answer from one of them.
    const client = await connectHost(target);
    // Nobody watches `spark exec` to wait out a reconnect: a server gone mid-task ends it.
    let offStatus = () => {};
    const lost = new Promise<never>((_, reject) => {
      offStatus = client.on("status", (status) => {
        if (status === "reconnecting" || status === "closed")
          reject(new SparkError("server_error", `Lost the connection to spark serve at ${target.url}.`));
      });
    });
    try {
      return await Promise.race([execOn(client, flags, prompt, output, "others"), lost]);
    } finally {
      offStatus();
      client.dispose();
    }
  }
  // Its own agent, behind the same agent host, reached in memory.
  await using local = await startLocalHost(flags, { mode: "exec" });
  // Nobody types while `spark exec` starts: its one task gets the tools of every MCP server that
  // starts (each within its startup timeout) rather than those that happen to be ready.
  await local.runtime.mcp.whenStarted();
  const client = await local.connect();
  try {
    return await execOn(client, flags, prompt, output, "deny");
  } finally {
    client.dispose();
  }
}

/** Runs the one task of `spark exec` as a new thread of the host `client` is connected to. */
async function execOn(
  client: HostClient,
  flags: AgentFlags,
  prompt: string,
  output: OutputWatch,
  approvals: "deny" | "others",
): Promise<number> {
  const warming = process.stderr.isTTY === true && flags.prewarm;
  if (warming) process.stderr.write("Warming up...");
  const thread = await HostThread.open(client);
  if (warming) process.stderr.write("\r\x1b[K");
  const interrupt = new AbortController();
  process.once("SIGINT", () => interrupt.abort());
  try {
    const status = await runPlain(thread, {
      input: prompt,
      stdout: process.stdout,
      stderr: output.stderr,
      json: flags.json === true,
      toolChoice: flags.toolChoice,
      mode: flags.plan ? "plan" : "default",
      signal: AbortSignal.any([interrupt.signal, output.signal]),
      approvals,
    });
    if (output.closed) return EXIT_OUTPUT_CLOSED;
    return status === "completed" ? 0 : 1;
  } finally {
    thread.close();
  }
}

/**
 * The terminal UI on a running `spark serve`: the model is loaded and warm already. Opens the
 * thread `open` names (a saved session's id, or the newest of a workspace, else a new one).
 */
async function interactiveAttached(
  target: HostTarget,
  open: { threadId?: string; newest?: string },
  prompt: string,
): Promise<number> {
  const client = await connectHost(target);
  const opened: HostThread[] = [];
  const openThread = async (threadId?: string) => {
    const thread = await HostThread.open(client, threadId);
    opened.push(thread);
    return thread;
  };
  try {
    const startup = new StartupStatus();
    const first = (async () => {
      const threadId = open.threadId ?? (open.newest ? (await client.list(open.newest))[0]?.id : undefined);
      const thread = await openThread(threadId);
      startup.set({ phase: "ready" });
      return thread;
    })();
    first.catch((error: unknown) =>
      startup.set({ phase: "failed", message: error instanceof Error ? error.message : String(error) }),
    );
    await runTui({
      thread: first,
      mcp: client,
      startup,
      ...(prompt.trim() ? { prompt: prompt.trim() } : {}),
      modelId: "",
      models: [],
      newThread: () => openThread(),
    });
    const failed = await first.then(
      () => false,
      () => true,
    );
    return failed ? 1 : 0;
  } finally {
    for (const thread of opened) thread.close();
    client.dispose();
  }
}

/** The client core's agent-host client, connected to `target`. */
async function connectHost(target: HostTarget): Promise<HostClient> {
  const client = new HostClient({
    url: target.url,
    ...(target.key ? { apiKey: target.key } : {}),
    createSocket: nodeSocketFactory,
  });
  try {
    await client.connect();
  } catch (error) {
    client.dispose();
    throw new SparkError(
      "upstream_unavailable",
      `Cannot reach the agent host at ${target.url}: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  return client;
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
  const target = await attachTarget(flags);
  if (target) {
    const threadId = resumeFile ? path.basename(resumeFile, ".jsonl") : undefined;
    return interactiveAttached(target, threadId ? { threadId } : {}, prompt);
  }
  // A config file that cannot be read is an error before the view opens (reading it takes no time).
  const config = await loadConfig({ cwd: flags.cd ?? process.cwd(), env: process.env });
  // The view takes input at once; the runtime (model load, pre-warm) starts behind it.
  const startup = new StartupStatus();
  const quit = new AbortController();
  const resumeId = resumeFile ? path.basename(resumeFile, ".jsonl") : undefined;
  const starting = startSession(flags, startup, quit.signal, resumeId, config);
  // A start that fails is shown by the view (and makes the exit status 1); quitting is no failure.
  let failed = false;
  starting.catch(() => {
    failed = !quit.signal.aborted;
  });
  // Its failure is shown through the first thread; this promise must not count as unhandled.
  const mcpFeed = starting.then((started) => started.client);
  mcpFeed.catch(() => {});
  let session: { local: LocalAgentHost; client: HostClient } | null = null;
  let current: HostThread | null = null;
  // /model NAME switches the current thread's following turns to tier NAME; /new keeps the tier.
  let model = "";
  const models: string[] = [];
  const threads: HostThread[] = [];
  /** The current thread's agent, in this process: /model sets its tier. */
  const switchModel = (thread: HostThread, tier: string) =>
    session!.local.thread(thread.info.id)?.setModel(tier);
  await runTui({
    thread: starting.then((started) => {
      session = started;
      current = started.first;
      model = started.local.runtime.modelId;
      models.push(...started.local.runtime.models);
      threads.push(current);
      return current;
    }),
    // The MCP servers of the agent host (/mcp), once it runs.
    mcp: mcpFeed,
    startup,
    ...(prompt.trim() ? { prompt: prompt.trim() } : {}),
    // Until the thread has started (then its own): --model's tier, or the file it names.
    modelId: path.basename(flags.model ?? "").replace(/\.gguf$/i, ""),
    models,
    onModelChange: async (next) => {
      const thread = current!;
      if (thread.busy) {
        thread.interrupt();
        await thread.whenIdle();
      }
      switchModel(thread, next);
      model = next;
      return thread;
    },
    newThread: async () => {
      const thread = await HostThread.open(session!.client);
      if (model !== session!.local.runtime.modelId) switchModel(thread, model);
      current = thread;
      threads.push(thread);
      return thread;
    },
  });
  // Quitting during the start stops it at its next step (a model load in progress finishes first).
  quit.abort();
  startup.answer(false);
  const started = await starting.catch(() => null);
  if (!started) return failed ? 1 : 0;
  for (const thread of threads) thread.close();
  started.client.dispose();
  // Stops the sub-agents still working (quietly: no turn starts for their ends), saves transcripts.
  await started.local.dispose();
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
