import { Readable, Writable } from "node:stream";
import { MessageTooLargeError, ndJsonStream } from "@agentclientprotocol/sdk";
import type { Command } from "commander";
import { addAgentOptions } from "../agent-commands.js";
import type { AgentFlags } from "../agent-flags.js";
import { acpAgent } from "./acp-agent.js";
import { AcpWorkspaces } from "./acp-workspaces.js";

/**
 * The longest JSON-RPC line read. A prompt's text is at most 1 MiB; the rest is room for embedded
 * resources (refused past the prompt's bound anyway). The SDK ends the connection past it.
 */
const MAX_MESSAGE_BYTES = 8 * 1024 * 1024;

/** `spark acp`: Spark as an Agent Client Protocol agent on stdin and stdout, for editors. */
export function registerAcpCommand(program: Command): void {
  addAgentOptions(program.command("acp"))
    .description(
      "run as an Agent Client Protocol (ACP) agent on stdin/stdout, for editors (Zed, JetBrains, Neovim)",
    )
    .action(async (flags: AgentFlags) => {
      process.exitCode = await runAcp(flags);
    });
}

/**
 * Serves one editor until it closes stdin (or SIGINT / SIGTERM). stdout carries JSON-RPC only:
 * everything else, `console.log` included, goes to stderr, where editors keep the agent's log.
 */
export async function runAcp(flags: AgentFlags): Promise<number> {
  const log = (line: string) => process.stderr.write(`spark acp: ${line}\n`);
  console.log = console.info = console.debug = (...args: unknown[]) => console.error(...args);
  await using workspaces = new AcpWorkspaces(flags, log);
  const connection = acpAgent(workspaces, log).connect(
    ndJsonStream(
      Writable.toWeb(process.stdout),
      Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>,
      {
        maxMessageBytes: MAX_MESSAGE_BYTES,
      },
    ),
  );
  // A bug in one request must not end every session of the editor: said on stderr, the rest goes on.
  const report = (error: unknown) =>
    log(`Unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.on("unhandledRejection", report);
  const stop = () => connection.close();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  try {
    await connection.closed;
    const reason: unknown = connection.signal.reason;
    if (reason instanceof MessageTooLargeError) {
      log(`The editor sent a line over ${MAX_MESSAGE_BYTES} bytes; the connection is closed.`);
      return 1;
    }
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
    process.off("unhandledRejection", report);
  }
  return 0;
}
