import { writeFile } from "node:fs/promises";
import { type Command, InvalidArgumentError, Option } from "commander";
import { loadConfig } from "../config/spark-config.js";
import { SparkError } from "../protocol/errors.js";
import { AgentRuntime } from "../runtime/agent-runtime.js";
import {
  collectDiff,
  describeTarget,
  fitDiffToContext,
  type ReviewTarget,
} from "../runtime/review/review-diff.js";
import type { ReviewReport } from "../runtime/review/review-findings.js";
import { formatReview, REVIEW_FORMATS, type ReviewFormat } from "../runtime/review/review-formats.js";
import { runReview } from "../runtime/review/review-thread.js";
import { StatusLine } from "../terminal/status-line.js";
import { keyFromFlags } from "./key-flags.js";
import { VERSION } from "./version.js";

interface ReviewFlags {
  uncommitted?: boolean;
  base?: string;
  commit?: string;
  format: ReviewFormat;
  output?: string;
  diffOnly?: boolean;
  model?: string;
  server?: string;
  apiKey?: string;
  apiKeyFile?: string;
  ctxSize?: number;
  cd?: string;
}

export function registerReviewCommand(program: Command): void {
  program
    .command("review")
    .description(
      "review a change with the model, read-only: findings as text, JSON or SARIF (for GitHub code scanning)",
    )
    .option("--uncommitted", "the working tree's changes against HEAD, new files included (the default)")
    .option("--base <branch>", "the changes of HEAD since it left BRANCH (git diff BRANCH...HEAD)")
    .option("--commit <sha>", "the changes one commit made")
    .addOption(
      new Option("--format <format>", "how findings are written").choices(REVIEW_FORMATS).default("text"),
    )
    .option("-o, --output <file>", "write the findings to FILE instead of stdout")
    .option(
      "--diff-only",
      "the model sees the diff alone, in one request with no tools: less work on a CPU, less context",
    )
    .option(
      "-m, --model <model>",
      "a tier of the config file, a GGUF path or hf: URI for the embedded engine; with --server, the model id",
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
    .option(
      "-c, --ctx-size <n>",
      "embedded engine: tokens of context (default: the model's, at least 4096 and at most 32768)",
      contextSize,
    )
    .option("-C, --cd <dir>", "the repository (default: the current directory)")
    .addHelpText(
      "after",
      `
The model may read files of the repository (read_file, list_dir, search) but has no tool that
edits or runs anything. Each finding is checked against the diff: one whose file or lines are not
in it is dropped (the count is reported). Exit status 0 when the review ran, findings or not.

Examples:
  $ spark review                                   # uncommitted changes, as text
  $ spark review --base origin/main --format sarif --output spark.sarif
  $ spark review --commit HEAD --format json
See docs/review-in-ci.md for a GitHub Actions workflow.`,
    )
    .action(async (flags: ReviewFlags) => {
      process.exitCode = await review(flags);
    });
}

/** `spark review`: 0 once the review ran (or there was nothing to review); errors throw. */
export async function review(flags: ReviewFlags): Promise<number> {
  const target = targetOf(flags);
  const cwd = flags.cd ?? process.cwd();
  // Before any model loads: not a repository, an unknown base, or nothing changed.
  const diff = await collectDiff(cwd, target);
  if (diff.files.length === 0) {
    process.stderr.write(`spark: nothing to review: no changed lines in ${describeTarget(target)}.\n`);
    const empty: ReviewReport = {
      version: 1,
      target: describeTarget(target),
      findings: [],
      dropped: 0,
      truncated: false,
    };
    if (flags.format !== "text" || flags.output)
      await write(flags, formatReview(empty, flags.format, VERSION));
    return 0;
  }
  await using runtime = await startRuntime(flags, diff.root);
  const fitted = fitDiffToContext(diff, runtime.contextBudget);
  const status = process.stderr.isTTY ? new StatusLine(`Reviewing ${describeTarget(target)}`) : null;
  if (!status)
    process.stderr.write(
      `spark: reviewing ${fitted.files.length} file${fitted.files.length === 1 ? "" : "s"} (${describeTarget(target)}) on ${runtime.modelId || "the server's model"}\n`,
    );
  let report: Awaited<ReturnType<typeof runReview>>;
  try {
    report = await runReview(
      fitted,
      { client: runtime.client, model: runtime.modelId, contextBudget: runtime.contextBudget },
      { readFiles: flags.diffOnly !== true },
    );
  } finally {
    status?.done(`Reviewed ${describeTarget(target)}`);
  }
  for (const dropped of report.droppedReasons)
    process.stderr.write(`spark: dropped a finding: ${dropped.reason}\n`);
  if (fitted.truncated)
    process.stderr.write(
      "spark: the diff was longer than the model's context allows; only its start was reviewed.\n",
    );
  const { droppedReasons: _, ...published } = report;
  await write(flags, formatReview(published, flags.format, VERSION));
  return 0;
}

function targetOf(flags: Pick<ReviewFlags, "uncommitted" | "base" | "commit">): ReviewTarget {
  const given = [
    flags.uncommitted ? "--uncommitted" : null,
    flags.base !== undefined ? "--base" : null,
    flags.commit !== undefined ? "--commit" : null,
  ].filter(Boolean);
  if (given.length > 1)
    throw new SparkError("invalid_request", `${given.join(" and ")} name different changes: give one.`);
  if (flags.base !== undefined) return { kind: "base", base: flags.base };
  if (flags.commit !== undefined) return { kind: "commit", sha: flags.commit };
  return { kind: "uncommitted" };
}

/** The model, without what a review never uses: no MCP servers, no language servers, no pre-warm of the agent prompt. */
async function startRuntime(flags: ReviewFlags, root: string): Promise<AgentRuntime> {
  const loaded = await loadConfig({ cwd: root });
  if (loaded.ignored)
    process.stderr.write(
      `spark: ${loaded.ignored.file} is not trusted: its settings are not applied (spark trust applies them).\n`,
    );
  const { ignored: _, ...config } = loaded;
  let status: StatusLine | null = null;
  const apiKey = flags.server
    ? keyFromFlags(
        { key: flags.apiKey, file: flags.apiKeyFile },
        { flag: "--api-key", fileFlag: "--api-key-file", env: ["SPARK_API_KEY", "OPENAI_API_KEY"] },
      )
    : undefined;
  const runtime = await AgentRuntime.start({
    cwd: root,
    config: { ...config, mcpServers: {}, diagnostics: false },
    ...(flags.model ? { model: flags.model } : {}),
    ...(flags.server ? { server: flags.server } : {}),
    ...(apiKey ? { apiKey } : {}),
    ...(flags.ctxSize ? { contextSize: flags.ctxSize } : {}),
    prewarm: false,
    // The review thread runs none; this keeps the runtime from reading the hook files.
    hooks: { hooks: [], notices: [] },
    onNotice: (message) => process.stderr.write(`spark: ${message}\n`),
    ...(process.stderr.isTTY
      ? {
          onProgress: (stage: "download" | "load", fraction: number) => {
            status ??= new StatusLine(stage === "download" ? "Downloading the model" : "Loading the model");
            status.update(fraction);
          },
        }
      : {}),
  });
  (status as StatusLine | null)?.done(`Model ready: ${runtime.modelId}`);
  return runtime;
}

async function write(flags: ReviewFlags, text: string): Promise<void> {
  if (flags.output) await writeFile(flags.output, text);
  else process.stdout.write(text);
}

function contextSize(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1024 || n > 1 << 20)
    throw new InvalidArgumentError("expected a whole number from 1024 to 1048576");
  return n;
}
