import { execFileSync, spawn } from "node:child_process";
import { mkdtemp, realpath } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import WebSocket from "ws";

/** Where in a reply a steer or cancel lands. */
export type Moment = "before_first_token" | "mid_stream" | "in_tool_call" | "as_it_ends";
export type Action = "steer" | "cancel";

export interface Trial {
  action: Action;
  moment: Moment;
}

type WireEvent = { type: string; [key: string]: unknown };

/** Small, fast, seedable: the same seed replays the same trials. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A WebSocket whose frames are parsed and kept, with waits on the next frame matching a test. */
export class EventSocket {
  readonly events: WireEvent[] = [];
  private waiters: { match: (event: WireEvent) => boolean; resolve: (event: WireEvent) => void }[] = [];
  private listeners: ((event: WireEvent) => void)[] = [];
  private closed = false;

  private constructor(private readonly socket: WebSocket) {
    socket.on("message", (data) => this.push(JSON.parse(String(data)) as WireEvent));
    socket.on("close", () => {
      this.closed = true;
    });
    socket.on("error", () => {
      this.closed = true;
    });
  }

  static async open(url: string, key: string | null): Promise<EventSocket> {
    const socket = new WebSocket(url, { headers: key ? { authorization: `Bearer ${key}` } : {} });
    await new Promise<void>((resolve, reject) => {
      socket.once("open", () => resolve());
      socket.once("error", reject);
    });
    return new EventSocket(socket);
  }

  send(message: object): void {
    if (!this.closed) this.socket.send(JSON.stringify(message));
  }

  /** Calls `listener` with every event from now on, before any wait sees it, until the returned function is called. */
  onEvent(listener: (event: WireEvent) => void): () => void {
    this.listeners.push(listener);
    return () => {
      this.listeners = this.listeners.filter((other) => other !== listener);
    };
  }

  /**
   * The first event from index `since` on (default: from now on) that `match` accepts; rejects
   * after `ms` with what was seen. Frames that arrive together are all handled before a promise's
   * continuation runs, so a wait that follows another one starts where that one's event was.
   */
  next(
    match: (event: WireEvent) => boolean,
    ms: number,
    what: string,
    since = this.events.length,
  ): Promise<WireEvent> {
    const seen = this.events.slice(since).find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((waiter) => waiter.resolve !== done);
        reject(new Error(`no ${what} within ${ms} ms; last events: ${this.tail()}`));
      }, ms);
      const done = (event: WireEvent) => {
        clearTimeout(timer);
        resolve(event);
      };
      this.waiters.push({ match, resolve: done });
    });
  }

  tail(count = 8): string {
    return this.events
      .slice(-count)
      .map((event) => event.type)
      .join(", ");
  }

  close(): void {
    this.socket.close();
  }

  private push(event: WireEvent): void {
    this.events.push(event);
    for (const listener of this.listeners) listener(event);
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) {
      if (waiter.match(event)) waiter.resolve(event);
      else this.waiters.push(waiter);
    }
  }
}

const TERMINAL = new Set(["response.completed", "response.incomplete", "response.failed"]);

/** Events that belong to a response's stream: none may come after the response ended. */
function isStreamed(event: WireEvent): boolean {
  return (
    event.type.startsWith("response.output_") ||
    event.type.startsWith("response.content_part") ||
    event.type.startsWith("response.function_call_arguments") ||
    event.type === "response.in_progress"
  );
}

const WRITE_TOOL = {
  type: "function",
  name: "write_file",
  description: "Writes a file.",
  parameters: {
    type: "object",
    properties: { path: { type: "string" }, content: { type: "string" } },
    required: ["path", "content"],
  },
};

export interface SoakOptions {
  /** `ws://host:port` of a `spark serve`. */
  base: string;
  key: string | null;
  random: () => number;
  /** How long a steer or cancel may take to be answered, and a reply to end after a cancel. */
  deadlineMs: number;
}

/**
 * One steer or cancel over the Responses WebSocket, at `trial.moment` of a reply, on a connection
 * of its own; throws with what it saw when an invariant breaks: a steer is answered exactly once
 * (`response.steer.failed`, `response.steer.pending`, or accepted and then its response ends
 * `incomplete` with reason `steered` and a successor is created), a cancel ends its response in
 * exactly one terminal event (or is refused when the response had ended), every response ends
 * exactly once within the deadline, and nothing of a response streams after its end.
 */
export async function responsesTrial(trial: Trial, options: SoakOptions): Promise<void> {
  const { random, deadlineMs } = options;
  const socket = await EventSocket.open(`${options.base}/v1/responses`, options.key);
  const ends = new Map<string, number>();
  const violations: string[] = [];
  let current: string | null = null;
  socket.onEvent((event) => {
    const response = event.response as { id: string } | undefined;
    if (event.type === "response.created" && response) current = response.id;
    else if (TERMINAL.has(event.type) && response) {
      ends.set(response.id, (ends.get(response.id) ?? 0) + 1);
      if (response.id === current) current = null;
    } else if (isStreamed(event) && current === null) {
      violations.push(`${event.type} after its response ended`);
    }
  });
  try {
    const tools = trial.moment === "in_tool_call";
    const created = socket.next((event) => event.type === "response.created", deadlineMs, "response.created");
    socket.send({
      type: "response.create",
      model: "any",
      input: tools ? "Write a story to story.txt." : "Once upon a time there was a little girl who",
      max_output_tokens: trial.moment === "as_it_ends" ? 2 + Math.floor(random() * 10) : 300,
      ...(tools ? { tools: [WRITE_TOOL], tool_choice: "required" } : {}),
    });
    const createdEvent = await created;
    const first = String((createdEvent.response as { id: string }).id);
    const firstEnd = socket.next(
      (event) => TERMINAL.has(event.type) && (event.response as { id: string }).id === first,
      deadlineMs * 4,
      `the end of ${first}`,
      socket.events.indexOf(createdEvent),
    );
    firstEnd.catch(() => undefined);
    await momentOf(trial.moment, socket, random, firstEnd, deadlineMs);

    if (trial.action === "cancel") {
      const refused = socket.next((event) => event.type === "error", deadlineMs, "error");
      refused.catch(() => undefined);
      socket.send({ type: "response.cancel", response_id: first });
      const outcome = await Promise.race([firstEnd.then(() => "ended"), refused.then(() => "refused")]);
      if (outcome === "refused" && ends.get(first) !== 1)
        throw new Error("a cancel was refused before its response ended");
    } else {
      const answered = socket.next(
        (event) =>
          event.type === "response.steer.failed" ||
          event.type === "response.steer.pending" ||
          event.type === "response.steer.accepted",
        deadlineMs,
        "an answer to the steer",
      );
      socket.send({ type: "response.steer", previous_response_id: first, input: "Then a dog came by." });
      const answer = await answered;
      if (answer.type === "response.steer.accepted") {
        const end = await firstEnd;
        const details = (end.response as { incomplete_details: { reason: string } | null })
          .incomplete_details;
        if (end.type !== "response.incomplete" || details?.reason !== "steered")
          throw new Error(
            `an accepted steer's response ended ${end.type} (${details?.reason ?? "no reason"})`,
          );
        const successor = await socket.next(
          (event) => event.type === "response.created" || event.type === "response.steer.failed",
          deadlineMs,
          "the steered successor",
          socket.events.indexOf(end),
        );
        if (successor.type === "response.created") {
          const id = String((successor.response as { id: string }).id);
          const done = socket.next(
            (event) => TERMINAL.has(event.type) && (event.response as { id: string }).id === id,
            deadlineMs,
            `the end of the successor ${id}`,
            socket.events.indexOf(successor),
          );
          socket.send({ type: "response.cancel", response_id: id });
          await done;
        }
      } else {
        await firstEnd.catch(async () => {
          socket.send({ type: "response.cancel", response_id: first });
          await socket.next(
            (event) => TERMINAL.has(event.type) && (event.response as { id: string }).id === first,
            deadlineMs,
            `the end of ${first} after a refused steer`,
          );
        });
      }
      const answers = socket.events.filter(
        (event) => event.type === "response.steer.failed" || event.type === "response.steer.pending",
      ).length;
      if (answer.type !== "response.steer.accepted" && answers !== 1)
        throw new Error(`the steer was answered ${answers} times`);
    }
    // Late events show up here: a round trip after the end.
    await roundTrip(socket, deadlineMs);
    for (const [id, count] of ends) if (count !== 1) violations.push(`${id} ended ${count} times`);
    if (violations.length > 0) throw new Error(violations.join("; "));
  } catch (error) {
    throw new Error(
      `${trial.action} ${trial.moment}: ${(error as Error).message}; events: ${socket.tail(12)}`,
    );
  } finally {
    socket.close();
  }
}

/** Waits until the reply reaches `moment` (or ends first). */
async function momentOf(
  moment: Moment,
  socket: EventSocket,
  random: () => number,
  end: Promise<unknown>,
  deadlineMs: number,
): Promise<void> {
  if (moment === "before_first_token") return;
  const ended = end.then(
    () => undefined,
    () => undefined,
  );
  if (moment === "in_tool_call") {
    const delta = socket.next(
      (event) => event.type === "response.function_call_arguments.delta",
      deadlineMs,
      "a call's arguments",
    );
    // A reply that has not started its call by the deadline is acted on anyway.
    await Promise.race([delta.catch(() => undefined), ended]);
    return;
  }
  // Mid-stream: after a few deltas; as it ends: a short reply, acted on after 0 to 3 deltas.
  let deltas = Math.floor(random() * (moment === "mid_stream" ? 20 : 4));
  while (deltas-- > 0) {
    const delta = socket.next((event) => event.type === "response.output_text.delta", deadlineMs, "a delta");
    const next = delta.then(
      () => "delta",
      () => "late",
    );
    if ((await Promise.race([next, ended.then(() => "ended")])) !== "delta") return;
  }
}

/** Resolves once the server answered a frame sent now: everything it sent before has arrived. */
async function roundTrip(socket: EventSocket, deadlineMs: number): Promise<void> {
  const answered = socket.next(
    (event) => event.type === "response.steer.failed" && (event.steer as { input: string }).input === "ping",
    deadlineMs,
    "the round trip",
  );
  socket.send({ type: "response.steer", previous_response_id: "resp_ping", input: "ping" });
  await answered;
}

/** An agent host connection with one thread, which the host trials share (its prompt is evaluated once). */
export interface HostThread {
  socket: EventSocket;
  threadId: string;
}

/** Starts a thread; its start evaluates the agent's system prompt (minutes when the cores are busy). */
export async function openHostThread(options: SoakOptions, startMs: number): Promise<HostThread> {
  const socket = await EventSocket.open(`${options.base}/v1/agent`, options.key);
  const started = socket.next(
    (event) => (event.type === "ack" || event.type === "error") && event.request_id === "start",
    startMs,
    "thread.start's answer",
  );
  socket.send({ type: "thread.start", request_id: "start" });
  const answer = await started;
  if (answer.type === "error") throw new Error(`thread.start refused: ${JSON.stringify(answer.error)}`);
  return { socket, threadId: String(answer.thread_id) };
}

export const STEER_TEXT = "Then a dog came by.";

/**
 * One `turn.steer` or `turn.interrupt` over the agent host, in a new turn of `thread`: a steer is
 * answered once (`turn.steered`; when the turn had ended, `turn.queued`, the next `turn.started`,
 * or an error), every turn
 * ends in exactly one `turn.completed` within the deadline (interrupted after the steer, to keep
 * trials short), and no item of a turn streams after it ended.
 */
export async function hostTrial(trial: Trial, options: SoakOptions, thread: HostThread): Promise<void> {
  const { random, deadlineMs } = options;
  const { socket, threadId } = thread;
  const from = socket.events.length;
  const completed = new Map<string, number>();
  const violations: string[] = [];
  const stop = socket.onEvent((event) => {
    const turn = event.turn_id as string | undefined;
    if (event.type === "turn.completed" && turn) completed.set(turn, (completed.get(turn) ?? 0) + 1);
    else if ((event.type === "item.delta" || event.type === "item.started") && turn && completed.has(turn))
      violations.push(`${event.type} of turn ${turn} after it completed`);
  });
  try {
    const request = `turn-${from}`;
    const ack = socket.next(
      (event) => (event.type === "ack" || event.type === "error") && event.request_id === request,
      deadlineMs,
      "turn.start's answer",
    );
    socket.send({ type: "turn.start", thread_id: threadId, input: "Tell me a story.", request_id: request });
    const acked = await ack;
    if (acked.type === "error") throw new Error(`turn.start refused: ${JSON.stringify(acked.error)}`);
    const turnId = String(acked.turn_id);
    const end = socket.next(
      (event) => event.type === "turn.completed" && event.turn_id === turnId,
      deadlineMs * 4,
      `turn.completed of ${turnId}`,
      socket.events.indexOf(acked),
    );
    end.catch(() => undefined);
    if (trial.moment !== "before_first_token") {
      let deltas = 1 + Math.floor(random() * 15);
      while (deltas-- > 0) {
        const delta = socket.next((event) => event.type === "item.delta", deadlineMs * 2, "an item delta");
        const next = delta.then(
          () => "delta",
          () => "late",
        );
        if (
          (await Promise.race([
            next,
            end.then(
              () => "ended",
              () => "ended",
            ),
          ])) !== "delta"
        )
          break;
      }
    }
    if (trial.action === "steer") {
      const answered = socket.next(
        (event) =>
          event.type === "error" ||
          // With no turn running (it ended first), a steer starts the next turn.
          ((event.type === "turn.steered" || event.type === "turn.queued" || event.type === "turn.started") &&
            event.input === STEER_TEXT),
        deadlineMs,
        "an answer to turn.steer",
      );
      socket.send({ type: "turn.steer", thread_id: threadId, input: STEER_TEXT });
      await answered;
    }
    socket.send({ type: "turn.interrupt", thread_id: threadId });
    await end;
    // A later turn (a steer queued after the turn ended) is interrupted too, and must end as well.
    for (const event of socket.events.slice(from)) {
      if (event.type !== "turn.started" || event.turn_id === turnId) continue;
      const later = String(event.turn_id);
      const laterEnd = socket.next(
        (e) => e.type === "turn.completed" && e.turn_id === later,
        deadlineMs * 4,
        `turn.completed of ${later}`,
        from,
      );
      if (!completed.has(later)) socket.send({ type: "turn.interrupt", thread_id: threadId });
      await laterEnd;
    }
    const pong = socket.next((event) => event.type === "thread.list", deadlineMs, "the round trip");
    socket.send({ type: "thread.list" });
    await pong;
    for (const [turn, count] of completed)
      if (count !== 1) violations.push(`turn ${turn} completed ${count} times`);
    const steered = socket.events.slice(from).filter((event) => event.type === "turn.steered").length;
    if (steered > 1) violations.push(`the steer was delivered ${steered} times`);
    if (violations.length > 0) throw new Error(violations.join("; "));
  } catch (error) {
    throw new Error(
      `host ${trial.action} ${trial.moment}: ${(error as Error).message}; events: ${socket.tail(12)}`,
    );
  } finally {
    stop();
  }
}

/** A `spark serve` (built `dist/`) in a fresh git workspace, without a key, keeping its log. */
export interface SoakServer {
  /** `ws://127.0.0.1:port` */
  base: string;
  /** Its workspace: a `spark acp` or `spark` started here with `env` attaches to it. */
  repo: string;
  /** XDG_STATE_HOME (where it recorded itself) and SPARK_SESSIONS_DIR, over this process's environment. */
  env: NodeJS.ProcessEnv;
  /** What it wrote to stderr so far (its request log): failures show the end of it. */
  log(): string;
  stop(): Promise<void>;
}

export async function startSoakServer(args: string[]): Promise<SoakServer> {
  const repo = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-soak-")));
  execFileSync("git", ["init", "-q"], { cwd: repo });
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    XDG_STATE_HOME: await mkdtemp(path.join(os.tmpdir(), "spark-soak-state-")),
    SPARK_SESSIONS_DIR: await mkdtemp(path.join(os.tmpdir(), "spark-soak-sessions-")),
  };
  delete env.SPARK_API_KEY;
  const bin = fileURLToPath(new URL("../../../bin/spark.js", import.meta.url));
  const child = spawn(process.execPath, [bin, "serve", ...args, "--no-auth", "--port", "0"], {
    cwd: repo,
    env,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  const base = await new Promise<string>((resolve, reject) => {
    child.stderr!.on("data", (chunk) => {
      stderr += chunk;
      const url = /WebSocket\s+(ws:\/\/\S+?)\/v1\/responses/.exec(stderr);
      if (url && /Model ready/.test(stderr)) resolve(url[1]!);
    });
    child.once("exit", () => reject(new Error(`spark serve exited:\n${stderr}`)));
  });
  return {
    base,
    repo,
    env,
    log: () => stderr.slice(-4000),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGINT");
      await exited;
    },
  };
}
