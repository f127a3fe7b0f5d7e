import { trustProject } from "../config/project-trust.js";
import {
  describeIgnoredSettings,
  type IgnoredProjectSettings,
  type LoadedConfig,
  loadConfig,
  withoutTierSettings,
} from "../config/spark-config.js";
import { SparkError } from "../protocol/errors.js";
import type { StartupQuestion, StartupStatus } from "./tui/startup-status.js";

export interface TrustedConfigOptions {
  /** Where the config and trust files are found. Default: process.env. */
  env?: NodeJS.ProcessEnv;
  /**
   * The terminal UI's start-up, to ask whether to trust the project. Without it (`spark exec`), an
   * untrusted project's settings are refused with an error saying which and why.
   */
  startup?: StartupStatus;
  /** Aborted when the person quits while the question is open. */
  signal?: AbortSignal;
  /** The config as loaded already (a broken file is then an error before any UI). Default: loaded here. */
  loaded?: LoadedConfig;
  /**
   * The model is a `--server`: the config's tiers are not used, so only the settings that still
   * apply (MCP servers, sandbox, limits, diagnostics) need trust. Default: false.
   */
  remoteModel?: boolean;
}

/**
 * The tiers of ~/.config/spark/config.toml and ./.spark/config.toml for an agent session. An
 * untrusted project's settings that need trust (the table in config/project-trust-table.ts): without a UI the start stops before
 * contacting anything (it does not guess what the project meant); with one, the person is asked,
 * and only an explicit yes records the trust (as `spark trust` does) and applies them.
 */
export async function trustedConfig(cwd: string, options: TrustedConfigOptions = {}): Promise<LoadedConfig> {
  const env = options.env ?? process.env;
  const applying = (loaded: LoadedConfig) => (options.remoteModel ? withoutTierSettings(loaded) : loaded);
  const config = applying(options.loaded ?? (await loadConfig({ cwd, env })));
  if (!config.ignored) return config;
  if (!options.startup) throw new SparkError("invalid_request", describeIgnoredSettings(config.ignored));
  const yes = await options.startup.ask(trustQuestion(config.ignored));
  options.signal?.throwIfAborted();
  if (!yes) return config;
  // The question showed the config's settings only: the hooks keep the trust they had (spark trust).
  await trustProject(config.ignored.root, { env, hooks: false });
  return applying(await loadConfig({ cwd, env }));
}

function trustQuestion(ignored: IgnoredProjectSettings): StartupQuestion {
  return {
    title: `${ignored.file} is ${ignored.changed ? "changed since you trusted it" : "not trusted"}`,
    details:
      "Trusting it would apply these settings, which can send your code or keys elsewhere, open\n" +
      "files, take memory on this machine, or change Spark's limits or which engine answers:\n" +
      ignored.settings.map((setting) => `  ${setting.path}: ${setting.reason}`).join("\n"),
    question: "Trust this project?",
    answered: {
      yes: `Trusted ${ignored.root}: its settings apply (spark trust --revoke undoes it).`,
      no: "Not trusted: going on without those settings (spark trust applies them later).",
    },
  };
}
