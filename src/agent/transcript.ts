import { readdir, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { ThreadEvent, ThreadInfo, ThreadItem } from "../protocol/agent.js";
import { JsonLinesFile, type LineFileSystem, readJsonLines } from "./json-lines-file.js";

/** Where sessions are kept: `$SPARK_HOME/sessions`, else `$XDG_DATA_HOME/spark/sessions`, else `~/.local/share/spark/sessions`. */
export function sessionsDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.SPARK_SESSIONS_DIR) return env.SPARK_SESSIONS_DIR;
  if (env.SPARK_HOME) return path.join(env.SPARK_HOME, "sessions");
  const data = env.XDG_DATA_HOME || path.join(os.homedir(), ".local", "share");
  return path.join(data, "spark", "sessions");
}

/**
 * One line per record: the thread's info first, then every completed item; a `rewind` drops the
 * items from that user message on (the conversation went back to before it).
 */
type Record =
  | { kind: "thread"; thread: ThreadInfo }
  | { kind: "item"; item: ThreadItem }
  | { kind: "rewind"; item_id: string };

/** A session's turn checkpoints (see agent/checkpoints.ts), beside its transcript. */
export function checkpointsFile(transcript: string): string {
  return transcript.replace(/\.jsonl$/, ".checkpoints");
}

export interface TranscriptOptions {
  /**
   * Told when the transcript cannot be written (disk full, permissions): once per outage. The
   * session goes on; what was not written is kept and written with the next record.
   */
  onError?: (error: Error) => void;
  /** Told when every record is on disk again after a reported failure. */
  onRecovered?: () => void;
  /** Default: node:fs (tests inject failures). */
  fs?: LineFileSystem;
}

/**
 * A session's transcript as JSON Lines, appended as items complete: each record is written before
 * the next listener of the thread hears of it, so a crash loses at most the item in flight. The
 * terminal and the web app share these files; they hold file contents and command output, so the
 * folder is 0700 and the files 0600. A failed write loses nothing and stops nothing (see
 * JsonLinesFile).
 */
export class Transcript {
  private constructor(private readonly lines: JsonLinesFile) {}

  /** A new session's transcript in `dir`, its first record the thread's info. */
  static start(dir: string, thread: ThreadInfo, options: TranscriptOptions = {}): Transcript {
    const transcript = new Transcript(new JsonLinesFile(path.join(dir, `${thread.id}.jsonl`), options));
    transcript.append({ kind: "thread", thread });
    return transcript;
  }

  /** Like {@link Transcript.start}; kept for callers that await it. Never rejects: failures go to `onError`. */
  static async create(dir: string, thread: ThreadInfo, options: TranscriptOptions = {}): Promise<Transcript> {
    return Transcript.start(dir, thread, options);
  }

  /** An existing transcript, appended to; the file and its folder are made private now. */
  static async open(file: string, options: TranscriptOptions = {}): Promise<Transcript> {
    const lines = new JsonLinesFile(file, options);
    lines.secure();
    return new Transcript(lines);
  }

  get file(): string {
    return this.lines.file;
  }

  /** Why records wait to be written; null when everything is on disk. */
  get error(): Error | null {
    return this.lines.error;
  }

  /** Records what a thread event makes permanent. Writes are serialised and never reordered. */
  observe(event: ThreadEvent): void {
    if (event.type === "item.completed") this.append({ kind: "item", item: event.item });
    else if (event.type === "thread.started") this.append({ kind: "thread", thread: event.thread });
    else if (event.type === "thread.rewound" && event.restore !== "code")
      this.append({ kind: "rewind", item_id: event.item_id });
  }

  /** Saves the thread's current info (title, times); the last one written wins on reading. */
  saveThread(thread: ThreadInfo): void {
    this.append({ kind: "thread", thread: { ...thread } });
  }

  private append(record: Record): void {
    this.lines.append(record);
  }

  /**
   * Resolves when every record so far is on disk; rejects with the write's error when retrying the
   * records that wait failed again (they stay queued for the next write).
   */
  async flush(): Promise<void> {
    await this.lines.flush();
    if (this.lines.waiting && this.lines.error) throw this.lines.error;
  }
}

export interface SavedSession {
  file: string;
  thread: ThreadInfo;
  items: ThreadItem[];
  /** Lines skipped as unreadable, a last line cut short by a crash not counted. */
  damagedLines: number;
}

/**
 * A saved session, replayed from its transcript. A line that does not parse is skipped: the last
 * one cut short by a crash, or one damaged otherwise (counted in `damagedLines`).
 */
export async function readSession(file: string): Promise<SavedSession> {
  let thread: ThreadInfo | undefined;
  const items: ThreadItem[] = [];
  const read = await readJsonLines(file, (value) => {
    const record = value as Record;
    if (record.kind === "thread") thread = record.thread;
    else if (record.kind === "item") items.push(record.item);
    else if (record.kind === "rewind") {
      const cut = items.findIndex((item) => item.type === "user_message" && item.id === record.item_id);
      if (cut !== -1) items.length = cut;
    }
  });
  if (!thread) throw new Error(`${file} is not a Spark session transcript.`);
  return { file, thread, items, damagedLines: read.damaged };
}

/** Saved sessions, most recently updated first; `size` in bytes (a transcript only grows). */
export async function listSessions(
  dir: string,
): Promise<{ file: string; id: string; modified: Date; size: number }[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const sessions = await Promise.all(
    names
      .filter((name) => name.endsWith(".jsonl"))
      .map(async (name) => {
        const file = path.join(dir, name);
        const stats = await stat(file);
        return { file, id: name.slice(0, -".jsonl".length), modified: stats.mtime, size: stats.size };
      }),
  );
  return sessions.sort((a, b) => b.modified.getTime() - a.modified.getTime());
}
