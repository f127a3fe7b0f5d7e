import { z } from "zod";
import type { SandboxMode, ToolDisplay } from "../../protocol/agent.js";
import type { Skill } from "../definitions/skills.js";
import type { EditDiagnostics } from "../diagnostics/edit-diagnostics.js";
import type { EditJournal } from "../edit-journal.js";
import type { CommandSandbox } from "../sandbox/command-sandbox.js";
import type { Workspace } from "../workspace.js";
import { ToolError, type ToolErrorCode } from "./tool-error.js";

export { ToolError, type ToolErrorCode } from "./tool-error.js";

/** A side effect the person may have to approve before a tool performs it. */
export type ApprovalRequest =
  | {
      kind: "shell";
      command: string;
      /** Absolute directory the command runs in. */
      cwd: string;
      /** The sandbox it will run in, shown to the person with the command. */
      sandbox: SandboxMode;
    }
  | {
      kind: "mcp";
      /** The server's name in config.toml. */
      server: string;
      /** The tool's own name on that server. */
      tool: string;
      /** The arguments as JSON text, bounded (see McpApprovalRequest). */
      arguments: string;
      /** The person marked the server trusted: its calls run without asking. Never sent to faces. */
      trusted: boolean;
    };

/** What a tool may touch. One context per tool call; the signal is the turn's. */
export interface ToolContext {
  workspace: Workspace;
  journal: EditJournal;
  signal: AbortSignal;
  /** Where approved commands run. */
  sandbox: CommandSandbox;
  /** Resolves true when the request may go ahead. May wait for the person. */
  approve(request: ApprovalRequest): Promise<boolean>;
  /** The workspace's language servers, asked for the errors a patch introduced. Absent: not checked. */
  diagnostics?: EditDiagnostics;
  /**
   * Starts a background sub-agent on `task` (as the defined agent `agent`, when named); returns its
   * id. Absent where none can run.
   */
  delegate?(task: string, context: string | undefined, agent?: string): string;
  /** The session's skills, for `load_skill`. Absent: none. */
  skills?: readonly Skill[];
  /**
   * Supplied by runTool: from this call on, an abort waits for the tool's own result instead of
   * answering "aborted". Tools call beginWriting(ctx), never this directly.
   */
  startWriting?(): void;
}

/**
 * Called by a tool just before its first change to the workspace that must finish once begun
 * (apply_patch's first write), in the same tick as that change's last check. Throws the abort
 * reason when the turn was interrupted, so nothing is written; otherwise an interrupt from now on
 * lets the tool finish and report what it changed (where undo and code rewinds find it) rather than
 * answering "aborted" while the change goes on unseen.
 */
export function beginWriting(ctx: ToolContext): void {
  ctx.signal.throwIfAborted();
  ctx.startWriting?.();
}

/** What a UI shows for a finished call, beside the text the model sees. */
export type { ToolDisplay };

export interface ToolResult {
  /** What the model sees. */
  output: string;
  isError: boolean;
  /** Why the call failed, for the loop and the UIs; set only on errors. */
  errorCode?: ToolErrorCode | "aborted";
  display?: ToolDisplay;
}

export interface Tool<A = unknown> {
  name: string;
  /** Shown to the model: what the tool does and when to use it. */
  description: string;
  /** JSON Schema of the arguments, shown to the model. */
  parameters: Record<string, unknown>;
  /** Validates the parsed arguments; the source of `parameters`. */
  schema: z.ZodType<A>;
  /** Changes nothing outside the conversation: the only tools a plan-mode turn runs. */
  readOnly?: true;
  /** Throws a ToolError for failures the model can act on. */
  run(args: A, ctx: ToolContext): Promise<ToolResult>;
}

/** Schema keywords only validation needs: `schema` checks them and names a broken one to the model. */
const VALIDATION_ONLY = ["minimum", "maximum", "minLength", "maxLength"] as const;

/**
 * The model-facing JSON Schema of an argument schema (without the `$schema` header): types,
 * required keys, defaults and descriptions. Bounds and `additionalProperties: false` are left out,
 * since every request repeats this and they are tokens the model reads for little: the call
 * grammar allows only the listed keys anyway, and `schema` still rejects what they would.
 */
export function parametersOf(schema: z.ZodType): Record<string, unknown> {
  const json = z.toJSONSchema(schema, {
    io: "input",
    override: ({ jsonSchema }) => {
      for (const key of VALIDATION_ONLY) delete jsonSchema[key];
      if (jsonSchema.additionalProperties === false) delete jsonSchema.additionalProperties;
    },
  }) as Record<string, unknown>;
  const { $schema: _, ...rest } = json;
  return rest;
}

/** The output the model gets for a call cut short by the turn's signal. */
export const ABORTED_OUTPUT = "aborted";

/**
 * Parses the model's JSON arguments, validates them, runs the tool. Never throws for bad input or
 * tool failures: they become `{isError: true, output}` messages the model can act on. An abort of
 * `ctx.signal` answers `"aborted"` at once, without waiting for the tool to wind down (every tool
 * here stops promptly on its own), unless the tool has begun writing (beginWriting): then its own
 * result is awaited and returned, so a change on disk is always one the caller was told of.
 */
export async function runTool(
  // biome-ignore lint/suspicious/noExplicitAny: a registry holds tools of every argument type
  tool: Tool<any>,
  argumentsJson: string,
  ctx: ToolContext,
): Promise<ToolResult> {
  if (ctx.signal.aborted) return aborted();
  let raw: unknown;
  try {
    // Models send an empty string for a call without arguments.
    raw = argumentsJson.trim() === "" ? {} : JSON.parse(argumentsJson);
  } catch (error) {
    return failure(
      "invalid_arguments",
      `The arguments to ${tool.name} are not valid JSON (${messageOf(error)}). ` +
        `Send one JSON object matching the tool's parameters.`,
    );
  }
  const parsed = tool.schema.safeParse(raw);
  if (!parsed.success) {
    return failure(
      "invalid_arguments",
      `Invalid arguments to ${tool.name}: ${describeIssues(parsed.error.issues)}. ` +
        `The parameters are: ${JSON.stringify(tool.parameters)}`,
    );
  }

  let writing = false;
  let onAbort = () => {};
  const abortion = new Promise<ToolResult>((resolve) => {
    onAbort = () => {
      if (!writing) resolve(aborted());
    };
    ctx.signal.addEventListener("abort", onAbort, { once: true });
  });
  const toolCtx: ToolContext = {
    ...ctx,
    startWriting: () => {
      writing = true;
    },
  };
  try {
    // Wrapped so a tool that throws before its first await is caught the same way.
    const run = (async () => tool.run(parsed.data, toolCtx))().catch((error: unknown) => {
      if (ctx.signal.aborted && !writing) return aborted();
      if (error instanceof ToolError) return failure(error.code, error.message);
      return failure("failed", `${tool.name} failed: ${messageOf(error)}`);
    });
    return await Promise.race([run, abortion]);
  } finally {
    ctx.signal.removeEventListener("abort", onAbort);
  }
}

function aborted(): ToolResult {
  return { output: ABORTED_OUTPUT, isError: true, errorCode: "aborted" };
}

function failure(code: ToolErrorCode, output: string): ToolResult {
  return { output, isError: true, errorCode: code };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function describeIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .map((issue) => {
      const where = issue.path.map(String).join(".");
      return where ? `'${where}': ${issue.message}` : issue.message;
    })
    .join("; ");
}
