import path from "node:path";
import type { AgentThread } from "../agent/agent-thread.js";
import { listSessions, readSession, sessionsDir } from "../agent/transcript.js";
import type { HostThreadSource } from "../host/agent-host.js";
import type { ThreadInfo } from "../protocol/agent.js";
import type { AgentRuntime } from "./agent-runtime.js";

/** The agent host's threads: new ones from the runtime, saved ones from the transcripts folder. */
export class SessionThreadSource implements HostThreadSource {
  constructor(
    private readonly runtime: () => AgentRuntime,
    private readonly dir: string = sessionsDir(),
  ) {}

  async create(): Promise<AgentThread> {
    return (await this.runtime().newThread()).thread;
  }

  async resume(threadId: string): Promise<AgentThread | null> {
    if (!/^[\w-]+$/.test(threadId)) return null;
    const file = path.join(this.dir, `${threadId}.jsonl`);
    const sessions = await listSessions(this.dir);
    if (!sessions.some((session) => session.file === file)) return null;
    return (await this.runtime().newThread(file)).thread;
  }

  async list(): Promise<ThreadInfo[]> {
    const sessions = await listSessions(this.dir);
    const infos = await Promise.all(
      sessions.slice(0, 200).map(async (session) => {
        try {
          return (await readSession(session.file)).thread;
        } catch {
          return null;
        }
      }),
    );
    return infos.filter((info): info is ThreadInfo => info !== null);
  }
}
