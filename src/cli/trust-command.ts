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
A repository's .spark/config.toml may tune the local engine within bounds (context up to 32768,
parallel up to 4, admission, shorter timeouts) without trust. Settings that send data or
credentials anywhere, open or download files, take more memory, choose a tier's engine
(upstream), set [limits], start MCP servers or loosen the sandbox are ignored, each named, until you
trust the project. Its .spark/hooks.json (commands run at points of each turn) runs only once
trusted too, and the trust covers the files inside the project its hooks name (scripts they run).
Trust records the project's real path and the SHA-256 of those files in
${trustFilePath()} (0600): when any of them changes (a git pull, say), it is ignored again until
you trust it again. Trust also lets language servers that run the project's own programs
(rust-analyzer, through cargo's config) check its edits; a project without .spark files can be
trusted for that alone.

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
    const scripts = Object.keys(trusted.hook_scripts ?? {});
    const named = scripts.length > 0 ? ` and the scripts its hooks run (${scripts.join(", ")})` : "";
    process.stdout.write(
      `Trusted ${trusted.root} with .spark/hooks.json as it is now (sha256:${trusted.hooks_sha256.slice(0, 12)})${named}: ` +
        `its hooks run from the next session${scripts.length > 0 ? ", until one of those files changes" : ""}.\n`,
    );
  }
  if (!before.sources.includes(projectConfigPath(dir)) && !trusted.hooks_sha256) {
    process.stdout.write(`Trusted ${trusted.root}: it has no .spark/config.toml or .spark/hooks.json.\n`);
  }
  process.stdout.write(
    "Language servers that run the project's own programs (rust-analyzer) now check its edits too.\n",
  );
}
