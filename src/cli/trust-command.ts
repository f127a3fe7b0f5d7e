import path from "node:path";
import type { Command } from "commander";
import {
  listTrustedProjects,
  projectConfigPath,
  revokeProject,
  trustFilePath,
  trustProject,
} from "../config/project-trust.js";
import { loadConfig } from "../config/spark-config.js";
import { SparkError } from "../protocol/errors.js";

interface TrustFlags {
  revoke: boolean;
  list: boolean;
}

const TRUST_HELP = `
A repository's .spark/config.toml may tune the local engine (context, parallel, admission, local
model files) without trust. Settings that send data or credentials anywhere (an upstream engine,
url, api_key_env, a model or draft_model to download) are ignored until you trust the project.
Its .spark/hooks.json (commands run at points of each turn) runs only once trusted too.
Trust records the project's real path and the SHA-256 of those files in
${trustFilePath()} (0600): when a file changes, it is ignored again until you trust it again.

Examples:
  $ spark trust              # trust ./.spark/config.toml as it is now
  $ spark trust --revoke
  $ spark trust --list
`;

export function registerTrustCommand(program: Command): void {
  program
    .command("trust")
    .description("let this project's .spark/config.toml send data where it says, and its hooks run")
    .argument("[dir]", "the project directory (default: the current directory)")
    .option("--revoke", "stop trusting the project", false)
    .option("--list", "list the trusted projects", false)
    .addHelpText("after", TRUST_HELP)
    .action(async (dir: string | undefined, flags: TrustFlags) => {
      await trust(path.resolve(dir ?? process.cwd()), flags);
    });
}

async function trust(dir: string, flags: TrustFlags): Promise<void> {
  if (flags.list && flags.revoke) throw new SparkError("invalid_request", "--list and --revoke go apart.");
  if (flags.list) {
    const projects = await listTrustedProjects();
    if (projects.length === 0) process.stdout.write("No trusted projects.\n");
    for (const project of projects) {
      process.stdout.write(`${project.root}  sha256:${project.sha256.slice(0, 12)}  ${project.trusted_at}\n`);
    }
    return;
  }
  if (flags.revoke) {
    const revoked = await revokeProject(dir);
    process.stdout.write(revoked ? `No longer trusting ${dir}.\n` : `${dir} was not trusted.\n`);
    return;
  }
  // What trusting enables, read before the trust is recorded (it also checks the file is valid).
  const before = await loadConfig({ cwd: dir, env: process.env });
  const trusted = await trustProject(dir);
  if (before.sources.includes(projectConfigPath(dir))) {
    process.stdout.write(
      `Trusted ${trusted.root} with .spark/config.toml as it is now (sha256:${trusted.sha256.slice(0, 12)}).\n`,
    );
    const enabled = before.ignored?.settings ?? [];
    if (enabled.length === 0) process.stdout.write("It holds nothing that needed trust.\n");
    else {
      process.stdout.write(
        `Now applied:\n${enabled.map((setting) => `  ${setting.path}: ${setting.reason}\n`).join("")}`,
      );
    }
  }
  if (trusted.hooks_sha256) {
    process.stdout.write(
      `Trusted ${trusted.root} with .spark/hooks.json as it is now (sha256:${trusted.hooks_sha256.slice(0, 12)}): ` +
        "its hooks run from the next session.\n",
    );
  }
}
