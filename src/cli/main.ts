import { Command, CommanderError } from "commander";
import { registerBenchCommand } from "../bench/bench-command.js";
import { SparkError } from "../protocol/errors.js";
import { registerAgentCommands } from "./agent-commands.js";
import { registerDoctorCommand } from "./doctor-command.js";
import { registerModelsCommand } from "./models-command.js";
import { registerServeCommand } from "./serve-command.js";
import { registerTrustCommand } from "./trust-command.js";
import { VERSION } from "./version.js";

/** Builds the `spark` command line. Exported separately so tests can drive it in-process. */
export function createProgram(): Command {
  const program = new Command()
    .name("spark")
    .description("Spark: a real-time coding assistant on your own machine.")
    .version(VERSION)
    .showHelpAfterError("(run with --help for usage)")
    .enablePositionalOptions()
    .exitOverride();
  registerAgentCommands(program);
  registerServeCommand(program);
  registerModelsCommand(program);
  registerBenchCommand(program);
  registerTrustCommand(program);
  registerDoctorCommand(program);
  return program;
}

/** Runs the CLI and returns the exit code; errors are printed once, without a stack. */
export async function main(argv: string[]): Promise<number> {
  const program = createProgram();
  try {
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
