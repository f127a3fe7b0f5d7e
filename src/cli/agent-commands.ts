import { type Command, InvalidArgumentError, Option } from "commander";
import { SANDBOX_MODES } from "../protocol/agent.js";
import type { TurnToolChoice } from "../protocol/agent-requests.js";
import { SparkError } from "../protocol/errors.js";
import { worktreeNameProblem } from "../protocol/worktree-name.js";
import type { AgentFlags } from "./agent-flags.js";
import { duration } from "./duration-option.js";
import { integer } from "./integer-option.js";

/*
 * This module only declares the agent commands: what each one runs is imported when it runs, so
 * `spark --version` and `--help` load neither the engine nor the views.
 */

const AGENT_HELP = `
Keys: Enter sends (and steers while the model types), Tab queues, Esc interrupts, /help for more.

Examples:
  $ spark                                  # interactive session in this repository
  $ spark "why does the parser drop the last line?"
  $ spark exec "rename parseLine to parseRow"    # one task, prints the answer, exits
  $ spark exec --json "list the TODOs"           # JSON Lines of every event
  $ spark --server http://gpu-box:8000/v1 --model qwen2.5-coder-32b
  $ spark resume --last
  $ spark --worktree fix-parser            # a session in its own git worktree, on branch spark/fix-parser
  $ spark worktree list                    # Spark's worktrees of this repository

The agent may ask to run a command on any turn; each one shows the command, its directory and
sandbox, and runs only once you approve it (or without asking, with --approval auto). Commands run
in a bubblewrap sandbox: the workspace writable (not .git or .spark), no network, no keys in the
environment (--sandbox).
`;

/** The flags every agent command takes (`spark`, `exec`, `resume`, `acp`). */
export function addAgentOptions(command: Command): Command {
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
    .option(
      "--max-output-tokens <n>",
      "tokens one model response may write before the turn stops (default: max_output_tokens in config.toml, else a quarter of the model's context, 256 to 16384)",
      integer(16, 1_000_000),
    )
    .option(
      "--compact-at <share>",
      "compact older turns once the conversation passes this share of the model's context, 0.1 to 0.95 (default: compact_at in config.toml, else 0.8)",
      (v) => {
        const share = Number(v);
        if (v.trim() === "" || !(share >= 0.1 && share <= 0.95))
          throw new InvalidArgumentError("expected a share of the context from 0.1 to 0.95, e.g. 0.8");
        return share;
      },
    )
    .option("--no-prewarm", "do not pre-warm the model with the system prompt at start")
    .option("-C, --cd <dir>", "workspace directory (default: the current directory)")
    .option(
      "--no-attach",
      "run the agent in this process even when a spark serve of yours runs for this workspace",
    )
    .option(
      "-c, --ctx-size <n>",
      "embedded engine: tokens of context (default: the model's, at least 4096 and at most 32768)",
      (v) => {
        const n = Number(v);
        if (!Number.isInteger(n) || n < 1024 || n > 1 << 20)
          throw new InvalidArgumentError("expected a whole number from 1024 to 1048576");
        return n;
      },
    );
}

export function registerAgentCommands(program: Command): void {
  addWorktreeOption(addAgentOptions(program))
    .argument("[prompt...]", "a first message to send")
    .addHelpText("after", AGENT_HELP)
    .action(async (prompt: string[], flags: AgentFlags) => {
      const { interactive } = await import("./interactive-command.js");
      // Not on a terminal the prompt runs as `spark exec` does: a new session.
      const entered = await inWorktree(flags, {
        resume: Boolean(process.stdin.isTTY && process.stdout.isTTY),
      });
      process.exitCode = await interactive(entered.flags, prompt.join(" "), entered.resumeFile);
    });

  const exec = program.command("exec");
  addWorktreeOption(addAgentOptions(exec))
    .description("run one task non-interactively: prints the final answer (or JSON Lines with --json)")
    .argument("<prompt...>", "the task")
    .option("--json", "print every event as one JSON line", false)
    .option(
      "--tool-choice <choice>",
      'the first model response must call a tool ("required") or the tool named (e.g. list_dir); later ones choose freely (default: auto)',
      toolChoiceOption,
    )
    .option(
      "--output-schema <file>",
      "a JSON Schema file: the final answer is JSON conforming to it (an unreadable or invalid file exits 2)",
    )
    .option("--plan", "plan mode: edits and commands are refused, the answer is a plan", false)
    .option(
      "--timeout <duration>",
      "stop the task after this long (e.g. 90s, 5m, 1h; exit code 124) (default: no limit)",
      durationOption,
    )
    .action(async (prompt: string[], flags: AgentFlags) => {
      const { exec } = await import("./exec-command.js");
      process.exitCode = await exec((await inWorktree(flags, { resume: false })).flags, prompt.join(" "));
    });
  registerExecResume(exec);

  addAgentOptions(program.command("resume"))
    .description("continue a saved session: the one ID names, the newest (--last), else pick one from a list")
    .argument("[id]", "session id, or the start of one (spark sessions lists them)")
    .option("--last", "the most recent session of this workspace", false)
    .action(async (id: string | undefined, flags: AgentFlags) => {
      const { interactive } = await import("./interactive-command.js");
      const { chooseSession } = await import("./session-choice.js");
      const onTerminal = Boolean(process.stdin.isTTY && process.stdout.isTTY);
      const file = await chooseSession(id, {
        last: flags.last === true,
        cd: flags.cd,
        ...(onTerminal
          ? {
              pick: async (sessions) =>
                (await (await import("./tui/load-tui.js")).loadTui()).pickSession(sessions),
            }
          : {}),
      });
      // Esc in the picker: nothing to continue, nothing went wrong.
      if (file === null) return;
      process.exitCode = await interactive(flags, "", file);
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
      const { attach } = await import("./interactive-command.js");
      process.exitCode = await attach(url, flags);
    });
}

/**
 * `spark exec resume ID "..."`: one more task in a saved session, its history kept. `exec` keeps
 * taking any prompt: only a first word `resume` is this command (quote a prompt that begins so).
 */
function registerExecResume(exec: Command): void {
  // Without this, a subcommand brings commander's `help` command: `spark exec help me ...` must stay a prompt.
  exec.helpCommand(false);
  addAgentOptions(exec.command("resume"))
    .description("continue a saved session with one more task (as spark exec does)")
    .argument("[id]", "session id or the start of one (spark sessions; with --last, part of the task)")
    .argument("[prompt...]", "the task")
    .option("--last", "the most recent session of this workspace", false)
    .option("--json", "print every event as one JSON line", false)
    .option(
      "--timeout <duration>",
      "stop the task after this long (e.g. 90s, 5m, 1h; exit code 124) (default: no limit)",
      durationOption,
    )
    .action(async (id: string | undefined, prompt: string[], flags: AgentFlags, command: Command) => {
      const { exec: run } = await import("./exec-command.js");
      const { chooseSession, sessionIdOf } = await import("./session-choice.js");
      const last = flags.last === true;
      const task = (last && id !== undefined ? [id, ...prompt] : prompt).join(" ");
      if (!last && id === undefined)
        throw new SparkError(
          "invalid_request",
          'spark exec resume needs a session id (or --last), then the task: spark exec resume ID "..."',
        );
      const file = await chooseSession(last ? undefined : id, { last, cd: flags.cd });
      // `spark exec --json resume ...`: exec's own --json (and --timeout) count too.
      const outer = command.parent?.opts<AgentFlags>();
      const merged = {
        ...flags,
        json: flags.json === true || outer?.json === true,
        ...(flags.timeout === undefined && outer?.timeout !== undefined ? { timeout: outer.timeout } : {}),
      };
      process.exitCode = await run(merged, task, sessionIdOf(file!));
    });
}

function addWorktreeOption(command: Command): Command {
  return command.option(
    "-w, --worktree [name]",
    "work in a git worktree of this repository on its own branch spark/NAME (made from HEAD when new; an existing one resumes its newest session; no name: a new generated one). See spark worktree --help",
    worktreeOption,
  );
}

/** The flags to run with: those of the session's worktree when `--worktree` names one. */
async function inWorktree(
  flags: AgentFlags,
  options: { resume: boolean },
): Promise<{ flags: AgentFlags; resumeFile?: string }> {
  if (flags.worktree === undefined) return { flags };
  const { enterWorktree } = await import("./worktree-session.js");
  return enterWorktree(flags, options);
}

function worktreeOption(value: string): string {
  const problem = worktreeNameProblem(value);
  if (problem) {
    throw new InvalidArgumentError(
      `${problem}. A first message goes before --worktree: spark "fix the parser" --worktree`,
    );
  }
  return value;
}

const durationOption = duration(1000, 7 * 24 * 3_600_000);

function toolChoiceOption(value: string): TurnToolChoice {
  if (value === "auto" || value === "required") return value;
  if (!/^[\w.:-]{1,128}$/.test(value))
    throw new InvalidArgumentError('expected "auto", "required" or a tool name such as list_dir');
  return { name: value };
}
