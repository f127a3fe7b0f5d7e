import { realpath, rm } from "node:fs/promises";
import path from "node:path";
import type { AgentThread } from "../agent/agent-thread.js";
import type { McpHub } from "../agent/mcp/mcp-hub.js";
import { checkpointsFile, listSessions, readSession, sessionsDir, Transcript } from "../agent/transcript.js";
import type { HostReview, HostReviewOptions, HostThreadSource } from "../host/host-thread-source.js";
import type { ReviewTarget, ThreadInfo, ThreadItem } from "../protocol/agent.js";
import type { ThreadMcpServer } from "../protocol/agent-requests.js";
import { SparkError } from "../protocol/errors.js";
import type { AgentRuntime, NewThreadOptions } from "./agent-runtime.js";
import { reviewSession } from "./review/session-review.js";
import type { SessionRecorder } from "./session-recorder.js";
import { SparkWorktrees } from "./spark-worktrees.js";

/** The agent host's threads: new ones from the runtime, saved ones from the transcripts folder. */
export class SessionThreadSource implements HostThreadSource {
  /** Threads this source made, with their transcripts (renames and deletes go through them). */
  private readonly live = new Map<
    string,
    { thread: AgentThread; transcript: SessionRecorder; mcp: McpHub | null }
  >();
  /** What the last list read of each transcript. */
  private listed = new Map<string, ListedTranscript>();

  constructor(
    private readonly runtime: () => AgentRuntime,
    private readonly dir: string = sessionsDir(),
    /** Where Spark's worktrees are found (`SPARK_HOME`, `XDG_DATA_HOME`). Default: `process.env`. */
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  /** A new thread; with `worktree`, in that Spark worktree of the workspace's repository (made if new). */
  async create(
    options: { worktree?: { name?: string }; mcpServers?: ThreadMcpServer[] } = {},
  ): Promise<AgentThread> {
    const runtime = this.runtime();
    const mcp = options.mcpServers?.length ? { mcpServers: options.mcpServers } : {};
    if (!options.worktree) return this.track(await runtime.newThread(undefined, undefined, mcp));
    const root = runtime.workspace.root;
    const trees = await SparkWorktrees.of(root, { env: this.env });
    const { worktree } = await trees.open(options.worktree.name, { base: root });
    return this.track(
      await runtime.newThread(undefined, undefined, {
        cwd: worktree.path,
        worktree: { name: worktree.name, branch: worktree.branch },
        ...mcp,
      }),
    );
  }

  /**
   * A saved session continued, or null if there is none. A session of another workspace is refused
   * (its tools would otherwise read and write this one), unless it works in a Spark worktree of this
   * workspace's repository that still exists: it continues there.
   */
  async resume(threadId: string): Promise<AgentThread | null> {
    const file = await this.fileOf(threadId);
    if (!file) return null;
    const { thread } = await readSession(file);
    const runtime = this.runtime();
    const place = await this.placeOf(thread);
    return this.track(await runtime.newThread(file, undefined, place));
  }

  /**
   * Where a thread of `info` works: this workspace (no options), or the Spark worktree of this
   * workspace's repository its `cwd` is (while it still exists). Any other folder is refused: the
   * thread's tools would otherwise read and write this workspace.
   */
  private async placeOf(info: ThreadInfo): Promise<NewThreadOptions> {
    const root = this.runtime().workspace.root;
    const cwd = await realpathOr(info.cwd);
    if (cwd === root) return {};
    const worktree = await SparkWorktrees.of(root, { env: this.env })
      .then((trees) => trees.owns(cwd))
      .catch(() => null);
    if (!worktree) {
      throw new SparkError(
        "invalid_request",
        `Thread ${info.id} belongs to ${info.cwd}, and this server works in ${root}; resume it with spark in its own folder.`,
        { param: "thread_id" },
      );
    }
    return { cwd: worktree.path };
  }

  /**
   * A fork (see host/thread-fork.ts): a transcript of its own holding `items`, continued as a saved
   * session is, on the parent's model when this runtime still serves it, in the parent's folder
   * (its worktree, for a worktree thread). The parent's edit journal stays with the parent: the
   * fork cannot undo or review the parent's patches.
   */
  async fork(info: ThreadInfo, items: ThreadItem[]): Promise<AgentThread> {
    const place = await this.placeOf(info);
    const transcript = await Transcript.create(this.dir, info);
    for (const item of items) transcript.observe({ type: "item.completed", turn_id: "", item });
    await transcript.flush();
    const runtime = this.runtime();
    const model = runtime.models.includes(info.model) ? info.model : undefined;
    return this.track(await runtime.newThread(transcript.file, model, place));
  }

  /**
   * Saved sessions with a user message, newest first (the newest 200 transcripts). A transcript is
   * read again only when its size or time changed since the last list: a list costs a stat per file.
   */
  async list(): Promise<ThreadInfo[]> {
    const sessions = (await listSessions(this.dir)).slice(0, 200);
    const listed = new Map<string, ListedTranscript>();
    const infos = await Promise.all(
      sessions.map(async ({ file, size, modified }) => {
        const known = this.listed.get(file);
        const entry =
          known && known.size === size && known.modified === modified.getTime()
            ? known
            : { size, modified: modified.getTime(), info: await listedInfo(file) };
        listed.set(file, entry);
        return entry.info;
      }),
    );
    this.listed = listed;
    return infos.filter((info): info is ThreadInfo => info !== null);
  }

  async rename(threadId: string, title: string): Promise<ThreadInfo | null> {
    const live = this.live.get(threadId);
    if (live) {
      live.thread.info.title = title;
      live.transcript.saveThread(live.thread.info);
      await live.transcript.flush();
      return { ...live.thread.info };
    }
    const file = await this.fileOf(threadId);
    if (!file) return null;
    const info = { ...(await readSession(file)).thread, title };
    const transcript = await Transcript.open(file);
    transcript.saveThread(info);
    await transcript.flush();
    return info;
  }

  async saveInfo(thread: AgentThread): Promise<void> {
    const live = this.live.get(thread.info.id);
    if (!live) return;
    live.transcript.saveThread(live.thread.info);
    await live.transcript.flush();
  }

  async remove(threadId: string): Promise<boolean> {
    const live = this.live.get(threadId);
    this.live.delete(threadId);
    if (live?.mcp) void this.runtime().releaseThreadMcp(live.mcp);
    // Pending appends first, or one landing after the delete would bring the file back.
    await live?.transcript.flush();
    const file = await this.fileOf(threadId);
    if (!file) return false;
    await rm(file, { force: true });
    await rm(checkpointsFile(file), { force: true });
    return true;
  }

  /** The runtime's models (tiers): what `thread.set_model` may switch a thread to. */
  models(): readonly string[] {
    return this.runtime().models;
  }

  /**
   * Reviews `target` in the thread's workspace (its worktree, for a worktree session), read-only,
   * on the thread's model (`thread.review`).
   */
  review(thread: AgentThread, target: ReviewTarget, options: HostReviewOptions): Promise<HostReview> {
    const runtime = this.runtime();
    const model = thread.model;
    const contextBudget = runtime.contextFor(model) ?? runtime.contextBudget;
    return reviewSession(thread.info.cwd, target, { client: runtime.client, model, contextBudget }, options);
  }

  /** Resolves when every live thread's transcript is on disk. */
  async flush(): Promise<void> {
    await Promise.all([...this.live.values()].map(({ transcript }) => transcript.flush()));
  }

  /** Cancels the running sub-agents of every live thread, quietly (no turn starts for their ends). */
  cancelSubAgents(): void {
    for (const { thread } of this.live.values()) thread.cancelSubAgents();
  }

  /** The host let the thread go: its transcript (flushed as it goes) is all that is kept. */
  release(threadId: string): void {
    const live = this.live.get(threadId);
    this.live.delete(threadId);
    if (live?.mcp) void this.runtime().releaseThreadMcp(live.mcp);
  }

  private track(made: { thread: AgentThread; transcript: SessionRecorder; mcp: McpHub | null }): AgentThread {
    this.live.set(made.thread.info.id, made);
    return made.thread;
  }

  /** The transcript of a saved session, or null (ids are checked, so no path leaves the folder). */
  private async fileOf(threadId: string): Promise<string | null> {
    if (!/^[\w-]+$/.test(threadId)) return null;
    const file = path.join(this.dir, `${threadId}.jsonl`);
    const sessions = await listSessions(this.dir);
    return sessions.some((session) => session.file === file) ? file : null;
  }
}

/** The real path of `dir`, or `dir` itself when it no longer exists. */
async function realpathOr(dir: string): Promise<string> {
  try {
    return await realpath(dir);
  } catch {
    return dir;
  }
}

/** A transcript as a list saw it: its size and time then, and its info (null: not listed). */
interface ListedTranscript {
  size: number;
  modified: number;
  info: ThreadInfo | null;
}

/** A transcript's info, or null for one never used (written by an older Spark) or unreadable. */
async function listedInfo(file: string): Promise<ThreadInfo | null> {
  try {
    const saved = await readSession(file);
    return saved.items.some((item) => item.type === "user_message") ? saved.thread : null;
  } catch {
    return null;
  }
}
