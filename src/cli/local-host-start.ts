import type { LoadedConfig } from "../config/spark-config.js";
import type { AgentRuntimeOptions } from "../runtime/agent-runtime.js";
import { LocalAgentHost } from "../runtime/local-agent-host.js";
import { StatusLine } from "../terminal/status-line.js";
import type { AgentFlags } from "./agent-flags.js";
import { keyFromFlags } from "./key-flags.js";
import { trustedConfig } from "./trusted-config.js";
import type { StartupStatus } from "./tui/startup-status.js";

/**
 * How a start reports: `exec` refuses an untrusted project's settings and shows progress only on a
 * terminal's stderr; the terminal UI asks whether to trust the project and shows progress itself.
 */
export type StartReporting =
  | { mode: "exec" }
  | { mode: "interactive"; startup: StartupStatus; signal: AbortSignal; config: LoadedConfig };

/** Starts this process's own agent (the model loads, unless it is a remote server) behind its host. */
export async function startLocalHost(flags: AgentFlags, reporting: StartReporting): Promise<LocalAgentHost> {
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
    ...(flags.maxOutputTokens ? { maxOutputTokens: flags.maxOutputTokens } : {}),
    ...(flags.compactAt !== undefined ? { compactAt: flags.compactAt } : {}),
    ...(flags.sandbox ? { sandbox: flags.sandbox } : {}),
    prewarm: flags.prewarm,
    ...(flags.inWorktree ? { worktree: flags.inWorktree } : {}),
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
