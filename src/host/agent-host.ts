import type { WebSocket } from "ws";
import type { AgentThread } from "../agent/agent-thread.js";
import type { HostEvent, HostThreadEvent, ThreadEvent, ThreadInfo } from "../protocol/agent.js";
import { HOST_REQUEST_SCHEMAS, type HostRequest, type HostRequestType } from "../protocol/agent-requests.js";
import { SparkError } from "../protocol/errors.js";
import { DEFAULT_JSON_LIMITS, parseUntrustedJson } from "../protocol/json-guard.js";
import { validate } from "../protocol/validate.js";

export interface HostThreadSource {
  /** A new thread. */
  create(): Promise<AgentThread>;
  /** A saved session continued under its id, or null if there is none. */
  resume(threadId: string): Promise<AgentThread | null>;
  /** Saved sessions, newest first. */
  list(): Promise<ThreadInfo[]>;
  /** Renames a thread (saved or live) in its transcript; the updated info, or null if there is none. */
  rename(threadId: string, title: string): Promise<ThreadInfo | null>;
  /** Deletes a thread's transcript; false if there was none. The host never deletes a running thread. */
  remove(threadId: string): Promise<boolean>;
}

export interface AgentHostOptions {
  /** Events kept per thread for clients that reconnect. Default: 20,000. */
  replayLimit?: number;
}

interface HostedThread {
  thread: AgentThread;
  seq: number;
  /** Recent stamped events, oldest first, for resuming clients. */
  replay: string[];
  replayFrom: number;
  subscribers: Set<WebSocket>;
  /** Stops listening to the thread (when it is deleted). */
  unsubscribe: () => void;
}

/**
 * Agent threads over WebSocket for the web app and editors. Every event of a thread gets a
 * per-thread sequence number; a client that reconnects resumes with `after_seq` and receives
 * exactly the events it missed, so streamed text is neither lost nor repeated.
 */
export class AgentHost {
  private readonly threads = new Map<string, HostedThread>();
  private readonly replayLimit: number;

  constructor(
    private readonly source: HostThreadSource,
    options: AgentHostOptions = {},
  ) {
    this.replayLimit = options.replayLimit ?? 20_000;
  }

  /** Serves one client connection. */
  accept(socket: WebSocket): void {
    // A protocol violation closes this connection (ws sends the close code); it must not stop the host.
    socket.on("error", () => {});
    socket.on("message", (data, isBinary) => {
      void this.onMessage(socket, data as Buffer, isBinary).catch((error) => send(socket, errorEvent(error)));
    });
    socket.on("close", () => {
      for (const hosted of this.threads.values()) hosted.subscribers.delete(socket);
    });
  }

  /** Interrupts every running turn (server shutdown). */
  interruptAll(): void {
    for (const hosted of this.threads.values()) hosted.thread.interrupt();
  }

  private async onMessage(socket: WebSocket, data: Buffer, isBinary: boolean): Promise<void> {
    if (isBinary) throw new SparkError("invalid_event", "Messages are JSON text frames.");
    const raw = parseUntrustedJson(data.toString("utf8"), DEFAULT_JSON_LIMITS);
    const type = (raw as { type?: unknown } | null)?.type;
    if (typeof type !== "string" || !Object.hasOwn(HOST_REQUEST_SCHEMAS, type)) {
      throw new SparkError("unknown_event_type", `Unknown message type ${JSON.stringify(type)}.`, {
        param: "type",
      });
    }
    const request = validate(
      HOST_REQUEST_SCHEMAS[type as HostRequestType],
      raw,
      "invalid_event",
    ) as HostRequest;
    switch (request.type) {
      case "thread.start": {
        const hosted = this.host(await this.source.create());
        this.subscribe(socket, hosted, -1);
        break;
      }
      case "thread.resume": {
        let hosted = this.threads.get(request.thread_id);
        if (!hosted) {
          const thread = await this.source.resume(request.thread_id);
          if (!thread)
            throw new SparkError("not_found", `No thread ${request.thread_id}.`, { param: "thread_id" });
          hosted = this.host(thread);
        }
        this.subscribe(socket, hosted, request.after_seq ?? -1);
        break;
      }
      case "thread.list":
        await this.sendList(socket);
        break;
      case "turn.start": {
        const { thread } = this.get(request.thread_id);
        if (thread.busy)
          throw new SparkError(
            "response_in_progress",
            "A turn is running; steer it, queue, or interrupt it.",
          );
        void thread.startTurn(request.input);
        break;
      }
      case "turn.steer":
        this.get(request.thread_id).thread.steer(request.input);
        break;
      case "turn.queue":
        this.get(request.thread_id).thread.enqueue(request.input);
        break;
      case "turn.interrupt":
        this.get(request.thread_id).thread.interrupt();
        break;
      case "approval.respond":
        this.get(request.thread_id).thread.respondToApproval(request.approval_id, request.approved);
        break;
      case "subagent.cancel":
        if (!this.get(request.thread_id).thread.cancelSubAgent(request.subagent_id)) {
          throw new SparkError("not_found", `No running sub-agent ${request.subagent_id}.`, {
            param: "subagent_id",
          });
        }
        break;
      case "thread.undo": {
        const hosted = this.get(request.thread_id);
        const undone = await hosted.thread.undoPatch();
        if (!undone) throw new SparkError("not_found", "Nothing to undo.");
        this.publish(hosted, { type: "patch.undone", item_id: undone.itemId, paths: undone.paths });
        break;
      }
      case "patch.accept":
      case "patch.reject": {
        const hosted = this.get(request.thread_id);
        const resolution = request.type === "patch.accept" ? "accepted" : "rejected";
        await hosted.thread.resolvePatchFile(request.item_id, request.path, resolution);
        this.publish(hosted, {
          type: "patch.resolved",
          item_id: request.item_id,
          path: request.path,
          resolution,
        });
        break;
      }
      case "thread.rename": {
        const hosted = this.threads.get(request.thread_id);
        if (hosted) hosted.thread.info.title = request.title;
        const info = await this.source.rename(request.thread_id, request.title);
        if (!hosted && !info)
          throw new SparkError("not_found", `No thread ${request.thread_id}.`, { param: "thread_id" });
        if (hosted) this.publish(hosted, { type: "thread.renamed", thread: { ...hosted.thread.info } });
        await this.sendList(socket);
        break;
      }
      case "thread.delete": {
        const hosted = this.threads.get(request.thread_id);
        if (hosted?.thread.busy)
          throw new SparkError("response_in_progress", "A turn is running; interrupt it before deleting.", {
            param: "thread_id",
          });
        const removed = await this.source.remove(request.thread_id);
        if (!hosted && !removed)
          throw new SparkError("not_found", `No thread ${request.thread_id}.`, { param: "thread_id" });
        const line = JSON.stringify({
          type: "thread.deleted",
          thread_id: request.thread_id,
        } satisfies HostEvent);
        for (const subscriber of new Set([socket, ...(hosted?.subscribers ?? [])])) send(subscriber, line);
        if (hosted) {
          hosted.unsubscribe();
          this.threads.delete(request.thread_id);
        }
        await this.sendList(socket);
        break;
      }
      default: {
        const unreachable: never = request;
        throw new Error(`Unhandled ${JSON.stringify(unreachable)}`);
      }
    }
  }

  /** Live threads first (most recently updated first), then saved ones. */
  private async sendList(socket: WebSocket): Promise<void> {
    const live = [...this.threads.values()]
      .map((h) => ({ ...h.thread.info }))
      .sort((a, b) => b.updatedAt.localeCompare(a.updatedAt));
    const saved = (await this.source.list()).filter((info) => !this.threads.has(info.id));
    send(socket, JSON.stringify({ type: "thread.list", threads: [...live, ...saved] } satisfies HostEvent));
  }

  private get(threadId: string): HostedThread {
    const hosted = this.threads.get(threadId);
    if (!hosted) {
      throw new SparkError("not_found", `No thread ${threadId} is open; start or resume it first.`, {
        param: "thread_id",
      });
    }
    return hosted;
  }

  private host(thread: AgentThread): HostedThread {
    const hosted: HostedThread = {
      thread,
      seq: -1,
      replay: [],
      replayFrom: 0,
      subscribers: new Set(),
      unsubscribe: () => {},
    };
    this.threads.set(thread.info.id, hosted);
    this.publish(hosted, { type: "thread.started", thread: { ...thread.info } });
    // A resumed session: its items so far, so a client can show them.
    if (thread.history.length > 0)
      this.publish(hosted, { type: "thread.history", items: [...thread.history] });
    hosted.unsubscribe = thread.on((event) => this.publish(hosted, event));
    return hosted;
  }

  private publish(hosted: HostedThread, event: ThreadEvent | HostThreadEvent): void {
    hosted.seq++;
    const line = JSON.stringify({ ...event, thread_id: hosted.thread.info.id, seq: hosted.seq });
    hosted.replay.push(line);
    if (hosted.replay.length > this.replayLimit) {
      hosted.replay.shift();
      hosted.replayFrom++;
    }
    for (const socket of hosted.subscribers) send(socket, line);
  }

  /** Sends every kept event after `afterSeq`, then live ones. */
  private subscribe(socket: WebSocket, hosted: HostedThread, afterSeq: number): void {
    const start = Math.max(afterSeq + 1, hosted.replayFrom);
    if (afterSeq + 1 < hosted.replayFrom) {
      send(
        socket,
        errorEvent(
          new SparkError("invalid_request", `Events before ${hosted.replayFrom} are no longer kept.`),
        ),
      );
    }
    for (let seq = start; seq <= hosted.seq; seq++) send(socket, hosted.replay[seq - hosted.replayFrom]!);
    hosted.subscribers.add(socket);
  }
}

function send(socket: WebSocket, line: string): void {
  if (socket.readyState === socket.OPEN) socket.send(line);
}

function errorEvent(error: unknown): string {
  return JSON.stringify({ type: "error", error: SparkError.from(error).toWire() } satisfies HostEvent);
}
