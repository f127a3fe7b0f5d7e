import { z } from "zod";
import type { HookProcessRun } from "./hook-process.js";
import type { HookEvent } from "./hooks-file.js";

/** What one hook's run means for the agent, and what the person is told about it. */
export interface HookOutcome {
  /**
   * The hook blocked (exit code 2, or a JSON decision), with its reason: PreToolUse denies the call,
   * UserPromptSubmit keeps the message from the model, PostToolUse tells the model, Stop makes the
   * turn go on. Null: it did not block.
   */
  block: string | null;
  /** Text for the model: `additionalContext`, or plain stdout of SessionStart and UserPromptSubmit. */
  context: string | null;
  /** One notice for the person: its output, its failure; null when it had nothing to say. */
  notice: string | null;
}

/** The JSON a hook may print on stdout (exit code 0), as other agents define it; other fields are ignored. */
const hookAnswerSchema = z.object({
  continue: z.boolean().optional(),
  stopReason: z.string().optional(),
  suppressOutput: z.boolean().optional(),
  systemMessage: z.string().optional(),
  decision: z.enum(["block", "approve"]).optional(),
  reason: z.string().optional(),
  hookSpecificOutput: z
    .object({
      hookEventName: z.string().optional(),
      permissionDecision: z.enum(["allow", "deny", "ask", "defer"]).optional(),
      permissionDecisionReason: z.string().optional(),
      additionalContext: z.string().optional(),
    })
    .optional(),
});

/** Events whose exit code 2 or `decision: "block"` does something (the others cannot block). */
const BLOCKING_EVENTS: readonly HookEvent[] = ["UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"];
/** Events whose plain stdout is context for the model rather than a notice. */
const CONTEXT_EVENTS: readonly HookEvent[] = ["SessionStart", "UserPromptSubmit"];

/** Interprets a finished hook run: exit code 2 blocks with stderr, 0 may print a JSON answer. */
export function hookOutcome(event: HookEvent, run: HookProcessRun, timeoutMs: number): HookOutcome {
  const stderr = boundedText(run.stderr.text, run.stderr.dropped);
  if (run.timedOut) {
    return failure(
      `ran past its ${timeoutMs / 1000} s budget and was killed; the turn goes on${tail(stderr)}`,
    );
  }
  if (run.exitCode === 2) {
    const reason = stderr || "(the hook gave no reason on stderr)";
    if (!BLOCKING_EVENTS.includes(event))
      return failure(`exited with 2 (${event} cannot block)${tail(stderr)}`);
    return { block: reason, context: null, notice: null };
  }
  if (run.exitCode !== 0) {
    const how = run.exitCode === null ? "was killed by a signal" : `failed with exit code ${run.exitCode}`;
    return failure(`${how}; ignored${tail(stderr)}`);
  }
  const stdout = run.stdout.text.trim();
  if (stdout === "") return { block: null, context: null, notice: stderr || null };
  if (run.stdout.dropped > 0) {
    return failure(
      `printed more than ${Buffer.byteLength(run.stdout.text)} bytes; its output was not used${tail(stderr)}`,
    );
  }
  if (!stdout.startsWith("{")) {
    if (CONTEXT_EVENTS.includes(event)) return { block: null, context: stdout, notice: stderr || null };
    return { block: null, context: null, notice: [stdout, stderr].filter(Boolean).join("\n") };
  }
  let answer: z.infer<typeof hookAnswerSchema>;
  try {
    const parsed = hookAnswerSchema.safeParse(JSON.parse(stdout));
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return failure(
        `printed JSON that is not a hook answer (${issue?.path.join(".")}: ${issue?.message}); ignored`,
      );
    }
    answer = parsed.data;
  } catch (error) {
    return failure(`printed invalid JSON (${(error as Error).message}); ignored`);
  }
  return fromAnswer(event, answer, stderr);
}

function fromAnswer(event: HookEvent, answer: z.infer<typeof hookAnswerSchema>, stderr: string): HookOutcome {
  const specific = answer.hookSpecificOutput;
  const notes = [answer.systemMessage, stderr].filter((note): note is string => Boolean(note));
  if (answer.continue === false) notes.push('"continue": false is not supported by Spark; ignored');
  let block: string | null = null;
  if (event === "PreToolUse" && specific?.permissionDecision === "deny") {
    block = specific.permissionDecisionReason || answer.reason || "(the hook gave no reason)";
  } else if (answer.decision === "block") {
    if (BLOCKING_EVENTS.includes(event)) block = answer.reason || "(the hook gave no reason)";
    else notes.push(`"decision": "block" does nothing for ${event}`);
  }
  return {
    block,
    context: specific?.additionalContext || null,
    notice: notes.length > 0 ? notes.join("\n") : null,
  };
}

function failure(notice: string): HookOutcome {
  return { block: null, context: null, notice };
}

function boundedText(text: string, dropped: number): string {
  const trimmed = text.trim();
  return dropped > 0 ? `${trimmed} [… ${dropped} more bytes]` : trimmed;
}

const tail = (stderr: string) => (stderr ? `: ${stderr}` : "");
