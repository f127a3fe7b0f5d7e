import { appendFile, mkdir, readdir, readFile, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { ThreadEvent, ThreadInfo, ThreadItem } from "../protocol/agent.js";

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

/**
 * A session's transcript as JSON Lines, appended as items complete, so a crash loses at most the
 * item in flight. The terminal and the web app share these files.
 */
export class Transcript {
  private constructor(
    readonly file: string,
    private queue: Promise<void> = Promise.resolve(),
  ) {}

  static async create(dir: string, thread: ThreadInfo): Promise<Transcript> {
    await mkdir(dir, { recursive: true });
    const transcript = new Transcript(path.join(dir, `${thread.id}.jsonl`));
    transcript.append({ kind: "thread", thread });
    return transcript;
  }

  static async open(file: string): Promise<Transcript> {
    return new Transcript(file);
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
    const line = `${JSON.stringify(record)}\n`;
    this.queue = this.queue.then(() => appendFile(this.file, line));
  }

  /** Resolves when every record so far is on disk. */
  flush(): Promise<void> {
    return this.queue;
  }
}

export interface SavedSession {
  file: string;
  thread: ThreadInfo;
  items: ThreadItem[];
}

export async function readSession(file: string): Promise<SavedSession> {
  const text = await readFile(file, "utf8");
  let thread: ThreadInfo | undefined;
  const items: ThreadItem[] = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    let record: Record;
    try {
      record = JSON.parse(line) as Record;
    } catch {
      continue; // a line cut short by a crash
    }
    if (record.kind === "thread") thread = record.thread;
    else if (record.kind === "item") items.push(record.item);
    else if (record.kind === "rewind") {
      const cut = items.findIndex((item) => item.type === "user_message" && item.id === record.item_id);
      if (cut !== -1) items.length = cut;
    }
  }
  if (!thread) throw new Error(`${file} is not a Spark session transcript.`);
  return { file, thread, items };
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
