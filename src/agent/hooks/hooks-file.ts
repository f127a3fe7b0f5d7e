import { z } from "zod";
import { SparkError } from "../../protocol/errors.js";
import { validate } from "../../protocol/validate.js";

/** The events Spark runs hooks for, named as in the hooks.json files other agents read. */
export const HOOK_EVENTS = [
  "SessionStart",
  "UserPromptSubmit",
  "PreToolUse",
  "PostToolUse",
  "Stop",
  "PreCompact",
] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];

/** Seconds a hook may run when its entry names no `timeout`. */
export const DEFAULT_HOOK_TIMEOUT_S = 60;
/** The longest `timeout` a hook may ask for, in seconds. */
export const MAX_HOOK_TIMEOUT_S = 600;
/** Bytes of a hooks.json read; a longer file is refused. */
export const MAX_HOOKS_FILE_BYTES = 256 * 1024;
/** Hook commands one file may declare. */
export const MAX_HOOKS_PER_FILE = 64;

/** One command to run on an event, from a hooks.json. */
export interface HookDefinition {
  event: HookEvent;
  /**
   * What the event is matched on must match this: a tool name (PreToolUse, PostToolUse), the
   * session's source (SessionStart: `startup`, `resume`) or the compaction's trigger (PreCompact:
   * `auto`). Null: every one (also `""` and `"*"` in the file). A regular expression over the whole
   * value, so `Edit|Write` names two tools exactly and `mcp__.*` every MCP tool.
   */
  matcher: RegExp | null;
  /** The bash command line. */
  command: string;
  timeoutMs: number;
  /** The hooks.json it came from (shown with its notices). */
  file: string;
}

/** The hooks one file declares, and what it declares that Spark does not run. */
export interface ParsedHooksFile {
  hooks: HookDefinition[];
  /** One line each for events and hook types Spark does not run (they are skipped, not errors). */
  skipped: string[];
}

const commandHookSchema = z.strictObject({
  type: z.literal("command"),
  command: z
    .string()
    .min(1)
    .max(16 * 1024),
  timeout: z.number().positive().max(MAX_HOOK_TIMEOUT_S).optional(),
});

/** Any kind of hook: `command` is checked by {@link commandHookSchema}, other agents' kinds are skipped. */
const anyHookSchema = z.looseObject({ type: z.string().min(1).max(64) });

const matcherGroupSchema = z.strictObject({
  matcher: z.string().max(1024).optional(),
  hooks: z.array(anyHookSchema).min(1),
});

const hooksFileSchema = z.strictObject({
  description: z.string().max(4096).optional(),
  hooks: z.record(z.string().min(1).max(64), z.array(matcherGroupSchema)),
});

/**
 * Reads a hooks.json (`{ "hooks": { EVENT: [ { "matcher": "...", "hooks": [ { "type": "command",
 * "command": "...", "timeout": SECONDS } ] } ] } }`). Throws a SparkError naming the file and the
 * offending field when the file is not that shape: nothing of a malformed file runs.
 */
export function parseHooksFile(text: string, file: string): ParsedHooksFile {
  if (Buffer.byteLength(text) > MAX_HOOKS_FILE_BYTES) {
    throw fileError(file, `it is over ${MAX_HOOKS_FILE_BYTES / 1024} KiB`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw fileError(file, `it is not valid JSON (${(error as Error).message})`);
  }
  let parsed: z.infer<typeof hooksFileSchema>;
  try {
    parsed = validate(hooksFileSchema, json);
  } catch (error) {
    throw fileError(file, (error as Error).message);
  }
  const hooks: HookDefinition[] = [];
  const skipped: string[] = [];
  for (const [event, groups] of Object.entries(parsed.hooks)) {
    if (!(HOOK_EVENTS as readonly string[]).includes(event)) {
      skipped.push(`${file}: ${event} hooks are not run by Spark (it runs ${HOOK_EVENTS.join(", ")}).`);
      continue;
    }
    for (const [index, group] of groups.entries()) {
      const matcher = compileMatcher(group.matcher, file, `hooks.${event}[${index}].matcher`);
      for (const [position, entry] of group.hooks.entries()) {
        if (entry.type !== "command") {
          skipped.push(
            `${file}: a ${event} hook of type '${entry.type}' is not run (Spark runs type 'command').`,
          );
          continue;
        }
        const checked = commandHookSchema.safeParse(entry);
        if (!checked.success) {
          const issue = checked.error.issues[0]!;
          const where = [`hooks.${event}[${index}].hooks[${position}]`, ...issue.path].join(".");
          throw fileError(file, `at '${where}': ${issue.message}`);
        }
        const hook = checked.data;
        hooks.push({
          event: event as HookEvent,
          matcher,
          command: hook.command,
          timeoutMs: (hook.timeout ?? DEFAULT_HOOK_TIMEOUT_S) * 1000,
          file,
        });
      }
    }
  }
  if (hooks.length > MAX_HOOKS_PER_FILE) {
    throw fileError(file, `it declares ${hooks.length} hook commands, more than ${MAX_HOOKS_PER_FILE}`);
  }
  return { hooks, skipped };
}

/** Whether `hook` runs for an event matched on `value` (absent for events without a matcher). */
export function hookMatches(hook: HookDefinition, value: string | undefined): boolean {
  return hook.matcher === null || value === undefined || hook.matcher.test(value);
}

function compileMatcher(matcher: string | undefined, file: string, where: string): RegExp | null {
  if (matcher === undefined || matcher === "" || matcher === "*") return null;
  try {
    return new RegExp(`^(?:${matcher})$`);
  } catch (error) {
    throw fileError(file, `'${where}' is not a valid regular expression (${(error as Error).message})`);
  }
}

function fileError(file: string, why: string): SparkError {
  return new SparkError(
    "invalid_request",
    `${file} is not a valid hooks file: ${why.replace(/\.$/, "")}. None of its hooks run.`,
  );
}
