import { Command, CommanderError } from "commander";
import { SparkError } from "../protocol/errors.js";
import { registerAgentCommands } from "./agent-commands.js";
import { writeToReader } from "./closed-output.js";
import { mistypedCommand } from "./typo-suggestion.js";
import { VERSION } from "./version.js";

type Register = (program: Command) => void;

/**
 * Commands whose modules load an engine, a server or a config parser: each is imported only when
 * the command line names it (`spark serve ...`, `spark serve --help`). Otherwise `spark --help`
 * lists it by its summary, which is the description its module gives it.
 */
export const LAZY_COMMANDS: Record<string, { summary: string; load: () => Promise<Register> }> = {
  serve: {
    summary: "serve a model over the OpenAI Responses API (HTTP, SSE and WebSocket) and Chat Completions",
    load: async () => (await import("./serve-command.js")).registerServeCommand,
  },
  models: {
    summary: "list, download and remove the GGUF models in Spark's cache",
    load: async () => (await import("./models-command.js")).registerModelsCommand,
  },
  bench: {
    summary: "measure Spark's speed claims, each against its baseline in the same run (ratios)",
    load: async () => (await import("../bench/bench-command.js")).registerBenchCommand,
  },
  acp: {
    summary:
      "run as an Agent Client Protocol (ACP) agent on stdin/stdout, for editors (Zed, JetBrains, Neovim)",
    load: async () => (await import("./acp/acp-command.js")).registerAcpCommand,
  },
  sessions: {
    summary: "list this workspace's saved sessions, newest first (continue one with spark resume ID)",
    load: async () => (await import("./sessions-command.js")).registerSessionsCommand,
  },
  review: {
    summary:
      "review a change with the model, read-only: findings as text, JSON or SARIF (for GitHub code scanning)",
    load: async () => (await import("./review-command.js")).registerReviewCommand,
  },
  trust: {
    summary: "let this project's .spark/config.toml send data where it says, and its hooks run",
    load: async () => (await import("./trust-command.js")).registerTrustCommand,
  },
  worktree: {
    summary: "list and remove the git worktrees of spark --worktree sessions",
    load: async () => (await import("./worktree-command.js")).registerWorktreeCommand,
  },
  doctor: {
    summary:
      "report the backend (cpu/cuda/vulkan/metal), CPU variant, threads, memory, model and context, and the change that would help most",
    load: async () => (await import("./doctor-command.js")).registerDoctorCommand,
  },
};

/**
 * Builds the `spark` command line for `argv` (as `process.argv`): the command it names is loaded in
 * full, the others only listed. Exported separately so tests can drive it in-process.
 */
export async function createProgram(argv: readonly string[] = []): Promise<Command> {
  const named = commandNamed(argv);
  const program = rootCommand();
  for (const [name, lazy] of Object.entries(LAZY_COMMANDS)) {
    if (name === named) (await lazy.load())(program);
    else program.command(name).description(lazy.summary);
  }
  return program;
}

/** Runs the CLI and returns the exit code; errors are printed once, without a stack. */
export async function main(argv: string[]): Promise<number> {
  try {
    const program = await createProgram(argv);
    refuseMistypedCommand(program, argv);
    await program.parseAsync(argv);
    // The action's own status: `spark exec` sets 1 after a failed turn, 141 when its reader went away.
    return typeof process.exitCode === "number" ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode;
    const message = error instanceof SparkError || error instanceof Error ? error.message : String(error);
    process.stderr.write(`spark: ${message}\n`);
    return 1;
  }
}

/**
 * `spark exce "hi"` is a mistyped command, not a prompt: refused with the command it was likely
 * meant to be, before anything starts. A prompt that only begins like one can be quoted whole.
 */
function refuseMistypedCommand(program: Command, argv: readonly string[]): void {
  const word = commandNamed(argv);
  if (word === undefined) return;
  // `help` is left out: "helm", "held" begin prompts more often than they misspell it.
  const meant = mistypedCommand(
    word,
    program.commands.map((command) => command.name()),
  );
  if (meant === null) return;
  throw new SparkError(
    "invalid_request",
    `unknown command '${word}'. Did you mean ${meant}? (spark ${meant} --help; to send it to the agent as a message, quote the whole message: spark "${word} ...")`,
  );
}

/** `spark` with the agent commands, which load what they run only when they run. */
function rootCommand(): Command {
  const program = new Command()
    .name("spark")
    .description("Spark: a real-time coding assistant on your own machine.")
    .version(VERSION)
    .showHelpAfterError("(run with --help for usage)")
    .enablePositionalOptions()
    .configureOutput({
      writeOut: (text) => writeToReader(process.stdout, text),
      writeErr: (text) => writeToReader(process.stderr, text),
    })
    .exitOverride();
  registerAgentCommands(program);
  return program;
}

/**
 * The lazy command `argv` names, found as commander finds it (the first operand, after the root's
 * options and their values), on a silent copy of the command line.
 */
function commandNamed(argv: readonly string[]): string | undefined {
  const probe = rootCommand().configureOutput({ writeOut: () => {}, writeErr: () => {} });
  for (const name of Object.keys(LAZY_COMMANDS)) probe.command(name);
  try {
    return probe.parseOptions(argv.slice(2)).operands[0];
  } catch {
    // An error in the root's options: the real parse reports it.
    return undefined;
  }
}
