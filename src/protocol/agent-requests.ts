import { z } from "zod";
import { AGENT_MODES, REWIND_RESTORES } from "./agent.js";
import { jsonSchemaObject } from "./output-format.js";
import { MAX_DRAFT_TEXT } from "./responses-request.js";
import { MAX_WORKTREE_NAME, WORKTREE_NAME_PATTERN } from "./worktree-name.js";

/** What clients of the agent host send, one JSON message per WebSocket frame. */

const threadId = z.string().min(1).max(128);
const itemId = z.string().min(1).max(128);
const path = z.string().min(1).max(4096);
/** Longest `thread.compact` focus, in UTF-16 code units. */
export const MAX_COMPACT_FOCUS = 2000;
/** Longest `workspace.files` query, in UTF-16 code units. */
export const MAX_FILE_QUERY = 256;
/** Most files one `workspace.files` answer lists. */
export const MAX_FILE_MATCHES = 50;
/** Largest turn input (`turn.start`, `turn.steer`, `turn.queue`), in UTF-8 bytes: 1 MiB. */
export const MAX_TURN_INPUT_BYTES = 1024 * 1024;
const input = z
  .string()
  .min(1)
  .max(MAX_TURN_INPUT_BYTES)
  .refine((text) => utf8Length(text) <= MAX_TURN_INPUT_BYTES, {
    message: `Input is limited to ${MAX_TURN_INPUT_BYTES} bytes (UTF-8).`,
  });

/**
 * `turn.start`'s `tool_choice`: the turn's first model response must call a tool (`"required"`) or
 * this one (`{name}`); later responses of the turn choose freely. Default: `"auto"`.
 */
export const turnToolChoiceSchema = z.union([
  z.enum(["auto", "required"]),
  z.strictObject({ name: z.string().min(1).max(128) }),
]);
export type TurnToolChoice = z.infer<typeof turnToolChoiceSchema>;

/** UTF-8 size of `text` without encoding it (this module also runs in browsers: no Buffer). */
function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4; // a surrogate pair: one code point of 4 bytes
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/** A worktree's name (see WORKTREE_NAME_PATTERN): one safe folder name, and a branch `spark/NAME`. */
export const worktreeNameSchema = z
  .string()
  .max(MAX_WORKTREE_NAME)
  .regex(WORKTREE_NAME_PATTERN, "Expected a worktree name such as fix-parser (letters, digits, _ - .).");

/** A client's name for one request, echoed by the `ack` or `error` that answers it. */
export const requestIdSchema = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9_.:-]+$/);

/** An absolute path, POSIX or Windows (this module also runs in browsers: no node:path). */
const absolutePath = path.regex(/^(?:\/|[A-Za-z]:[\\/])/, "Expected an absolute path.");

/** Every request's schema: its own fields plus the optional `request_id`. */
function request<const T extends string, S extends z.ZodRawShape = Record<never, never>>(
  type: T,
  shape: S = {} as S,
) {
  return z.object({ type: z.literal(type), request_id: requestIdSchema.optional(), ...shape });
}

/** A name and a value (an environment variable, an HTTP header), as editors send them over ACP. */
const namedValue = (name: z.ZodString) => z.strictObject({ name, value: z.string().max(8192) });

/**
 * An MCP server a client brings for one thread (an editor's, over ACP): a stdio program or a
 * streamable HTTP endpoint. `name` as in config.toml's `[mcp_servers.NAME]`.
 */
export const threadMcpServerSchema = z.union([
  z.strictObject({
    name: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,23}$/),
    command: z.string().min(1).max(4096),
    args: z.array(z.string().max(8192)).max(256).optional(),
    env: z
      .array(namedValue(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/)))
      .max(128)
      .optional(),
  }),
  z.strictObject({
    name: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,23}$/),
    url: z.url({ protocol: /^https?$/ }).max(4096),
    headers: z
      .array(namedValue(z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/)))
      .max(64)
      .optional(),
  }),
]);
export type ThreadMcpServer = z.infer<typeof threadMcpServerSchema>;

/** Longest branch, tag or commit a `thread.review` names. */
export const MAX_REVIEW_REF = 200;

/**
 * A branch, tag or commit as git spells one (`main`, `origin/main`, `v1.2`, `HEAD~2`, a SHA). It
 * reaches git's command line, so it may not start with `-` (an option such as `--upload-pack=x`)
 * and holds no spaces, colons or other characters git would read as syntax.
 */
export const gitRefSchema = z
  .string()
  .min(1)
  .max(MAX_REVIEW_REF)
  .regex(/^[A-Za-z0-9_][A-Za-z0-9_./~^-]*$/, "Expected a branch, tag or commit such as main or HEAD~1.")
  .refine((ref) => !ref.includes(".."), { message: "Expected one branch, tag or commit, not a range." });

/** `thread.review`'s `target`. */
export const reviewTargetSchema = z.discriminatedUnion("kind", [
  z.strictObject({ kind: z.literal("uncommitted") }),
  z.strictObject({ kind: z.literal("base"), base: gitRefSchema }),
  z.strictObject({ kind: z.literal("commit"), sha: gitRefSchema }),
]);

export const HOST_REQUEST_SCHEMAS = {
  "thread.start": request("thread.start", {
    /**
     * Start the thread in a git worktree of the host's repository, on branch `spark/NAME`: created
     * when there is none of that name (`name` omitted: a new generated name), else the existing one.
     */
    worktree: z.strictObject({ name: worktreeNameSchema.optional() }).optional(),
    /**
     * MCP servers for this thread only, beside the host's own (an editor's, over ACP). They start
     * only in a workspace the person trusts (`spark trust`), as a project's servers do, and each
     * call asks for approval. Default: none.
     */
    mcp_servers: z.array(threadMcpServerSchema).max(16).optional(),
  }),
  "thread.resume": request("thread.resume", {
    thread_id: threadId,
    /** Replay only events after this sequence number (a reconnecting client's last one). */
    after_seq: z.number().int().min(-1).optional(),
    /**
     * The host epoch `after_seq` belongs to (from the events the client saw). Another epoch's, or a
     * `seq` beyond the host's, is answered with a `thread.history` reset, not a continuation.
     */
    epoch: z.string().min(1).max(64).optional(),
  }),
  /**
   * This client stops following the thread: the host sends it no more of the thread's events. The
   * thread goes on (its running turn, its other subscribers) and, once idle, may be let go (it stays
   * resumable). Acked; unknown or unfollowed threads are acked too (nothing to stop).
   */
  "thread.unsubscribe": request("thread.unsubscribe", { thread_id: threadId }),
  "thread.list": request("thread.list", {
    /** Only this workspace's sessions (an absolute path, as in ThreadInfo's `cwd`). Default: all. */
    workspace: absolutePath.optional(),
  }),
  "turn.start": request("turn.start", {
    thread_id: threadId,
    input,
    tool_choice: turnToolChoiceSchema.optional(),
    /**
     * The JSON Schema this turn's answer conforms to (`spark exec --output-schema`): every model
     * response of the turn is asked for it as `text.format`, so the final message is JSON of it
     * (a response may still call tools). Default: free text.
     */
    output_schema: jsonSchemaObject.optional(),
    /** This turn's mode, kept as the thread's mode for the turns after it. Default: the thread's. */
    mode: z.enum(AGENT_MODES).optional(),
  }),
  /** Sets the mode of the thread's next turns (see `turn.start`'s `mode`); no event (an `ack`). */
  "thread.set_mode": request("thread.set_mode", { thread_id: threadId, mode: z.enum(AGENT_MODES) }),
  "turn.steer": request("turn.steer", { thread_id: threadId, input }),
  "turn.queue": request("turn.queue", { thread_id: threadId, input }),
  "turn.interrupt": request("turn.interrupt", { thread_id: threadId }),
  /** Type-ahead: the message being typed, forwarded to the model server as a draft; no event (an `ack` with `request_id`). */
  "turn.draft": request("turn.draft", { thread_id: threadId, input: z.string().max(MAX_DRAFT_TEXT) }),
  /** Reverts the thread's newest patch; answered with `patch.undone`. */
  "thread.undo": request("thread.undo", { thread_id: threadId }),
  /**
   * Goes back to just before the turn started by user message `item_id`: the files the agent
   * changed since (`code`), the conversation (`conversation`), or both (code first: when code is
   * refused nothing changes). Refused while a turn runs; answered with `thread.rewound`.
   */
  "thread.rewind": request("thread.rewind", {
    thread_id: threadId,
    item_id: itemId,
    restore: z.enum(REWIND_RESTORES),
  }),
  /**
   * Compacts the thread's older turns now (`/compact`), keeping `focus` in the summary; refused while
   * a turn runs. Answered with a `notice` item ("Context compacted: 12,300 -> 2,100 tokens") and
   * `context.updated`; with nothing old enough to compact, the notice says so.
   */
  "thread.compact": request("thread.compact", {
    thread_id: threadId,
    focus: z.string().max(MAX_COMPACT_FOCUS).optional(),
  }),
  "thread.rename": request("thread.rename", {
    thread_id: threadId,
    title: z.string().trim().min(1).max(200),
  }),
  /**
   * Sends the thread's following turns to another model (one of the host's tiers); refused while a
   * turn runs. Answered with `thread.renamed` carrying the thread's info with its new `model`.
   */
  "thread.set_model": request("thread.set_model", {
    thread_id: threadId,
    model: z
      .string()
      .min(1)
      .max(128)
      .regex(/^[\w.:/-]+$/),
  }),
  /**
   * A new thread holding the open thread's items up to and including the turn its user message
   * `item_id` starts (default: all of them), with a transcript of its own; refused while a turn
   * runs. Answered as `thread.start` is (`thread.started`, `thread.history`); the `ack` carries
   * the new thread's id.
   */
  "thread.fork": request("thread.fork", { thread_id: threadId, item_id: itemId.optional() }),
  /** Deletes a thread and its transcript; refused while a turn runs. */
  "thread.delete": request("thread.delete", { thread_id: threadId }),
  /** Keeps one file of an applied patch (the tool call `item_id`); answered with `patch.resolved`. */
  "patch.accept": request("patch.accept", { thread_id: threadId, item_id: itemId, path }),
  /**
   * Restores one file of an applied patch to its content from before that patch; refused when the
   * file changed since. Answered with `patch.resolved`.
   */
  "patch.reject": request("patch.reject", { thread_id: threadId, item_id: itemId, path }),
  "subagent.cancel": request("subagent.cancel", {
    thread_id: threadId,
    subagent_id: z.string().min(1).max(128),
  }),
  /**
   * The files of the thread's workspace that match `query` best (fuzzy, as for an `@` mention):
   * answered with `workspace.files`, then the `ack`. `limit` default: 8.
   */
  "workspace.files": request("workspace.files", {
    thread_id: threadId,
    query: z.string().max(MAX_FILE_QUERY),
    limit: z.number().int().min(1).max(MAX_FILE_MATCHES).optional(),
  }),
  /** What the session changed so far (`/diff`): answered with `thread.diff`, then the `ack`. */
  "thread.diff": request("thread.diff", { thread_id: threadId }),
  /**
   * Reviews a change in the thread's workspace (its worktree, for a worktree session), read-only,
   * on the thread's model (`/review`): `review.progress` events as it goes, then `thread.review`
   * with the findings, then the `ack`. Refused while a turn or another review of the thread runs.
   * `target` default: the uncommitted changes.
   */
  "thread.review": request("thread.review", { thread_id: threadId, target: reviewTargetSchema.optional() }),
  "approval.respond": request("approval.respond", {
    thread_id: threadId,
    approval_id: z.string().min(1).max(128),
    approved: z.boolean(),
  }),
} as const;

export type HostRequestType = keyof typeof HOST_REQUEST_SCHEMAS;
export type HostRequest = {
  [K in HostRequestType]: z.infer<(typeof HOST_REQUEST_SCHEMAS)[K]>;
}[HostRequestType];
