import path from "node:path";
import { readSession } from "../../agent/transcript.js";
import type { StampedEvent } from "../../client-core/thread-view.js";
import { type Answer, EXPLORE_DEADLINE_MS, ExploreClient } from "./explore-client.js";
import {
  type Defect,
  fileDefects,
  firstDifference,
  type InvariantName,
  inputDefects,
  itemLines,
  type SentInput,
  seqDefects,
  turnDefects,
  viewLines,
} from "./explore-invariants.js";
import { EXPLORE_FILE, type ExploreWorld, type RequestLog } from "./explore-world.js";

/** Refusals the host may answer a random request with; anything else is a defect. */
const EXPECTED_REFUSALS = new Set(["response_in_progress", "invalid_request", "not_found", "limit_reached"]);

/** A failed invariant: its name leads the message, so a run's report says which one broke. */
export class InvariantViolation extends Error {
  constructor(readonly defects: Defect[]) {
    super(defects.map((defect) => `[${defect.invariant}] ${defect.detail}`).join("\n"));
  }
}

export interface ExploreRunOptions {
  /** Invariants not checked (known defects kept out of the bounded run). Default: none. */
  skip?: ReadonlySet<InvariantName>;
  /** The model's pace allows waiting for every turn at a settle; false: settle interrupts them first. */
  waitForTurns?: boolean;
  /** How long a request or a settle may take before it is called a hang. Default: EXPLORE_DEADLINE_MS. */
  deadlineMs?: number;
}

/**
 * One explored history: three faces and an observer (a fourth client following every thread,
 * never disconnected: the complete record) against one {@link ExploreWorld}. Commands act through
 * it; {@link check} runs the cheap invariants after every step, {@link settle} the deep ones.
 */
export class ExploreRun {
  readonly clients: ExploreClient[];
  readonly observer: ExploreClient;
  /** Threads started or forked, in order (deleted ones stay, marked in {@link deleted}). */
  readonly threads: string[] = [];
  readonly deleted = new Set<string>();
  readonly sent: SentInput[] = [];
  /** A counter making every input unique (`t3`, `s4`, `q5`, files `f6`). */
  private inputs = 0;
  private readonly skip: ReadonlySet<InvariantName>;
  private readonly deadlineMs: number;

  private constructor(
    readonly world: ExploreWorld,
    private readonly requests: RequestLog,
    private readonly options: ExploreRunOptions,
  ) {
    this.skip = options.skip ?? new Set();
    this.deadlineMs = options.deadlineMs ?? EXPLORE_DEADLINE_MS;
    this.clients = ["a", "b", "c"].map(
      (name) => new ExploreClient(name, world.agentUrl, world.changes, this.deadlineMs),
    );
    this.observer = new ExploreClient("observer", world.agentUrl, world.changes, this.deadlineMs);
  }

  static async start(world: ExploreWorld, requests: RequestLog, options: ExploreRunOptions = {}) {
    const run = new ExploreRun(world, requests, options);
    await run.observer.connect();
    for (const client of run.clients) await client.connect();
    return run;
  }

  /** The next unique tag with `prefix` (`t`, `s`, `q`, `f`). */
  tag(prefix: string): string {
    return `${prefix}${++this.inputs}`;
  }

  /** A thread by index among those not deleted; null when there are none. */
  threadAt(index: number): string | null {
    const live = this.threads.filter((id) => !this.deleted.has(id));
    return live.length === 0 ? null : live[index % live.length]!;
  }

  /** The observer's stream of a thread. */
  stream(threadId: string): readonly StampedEvent[] {
    return this.observer.received.get(threadId) ?? [];
  }

  /**
   * Sends a request and checks its answer is an ack or an expected refusal; a new thread (start,
   * fork) is followed by the observer at once.
   */
  async request(client: ExploreClient, body: { type: string; [key: string]: unknown }): Promise<Answer> {
    const answer = await client.request(body);
    if (answer.type === "error" && !EXPECTED_REFUSALS.has(answer.code) && answer.code !== "disconnected") {
      this.fail([
        { invariant: "answers", detail: `${body.type} answered ${answer.code}: ${answer.message}` },
      ]);
    }
    if (
      answer.type === "ack" &&
      answer.thread_id &&
      (body.type === "thread.start" || body.type === "thread.fork")
    ) {
      this.threads.push(answer.thread_id);
      const followed = await this.observer.request({ type: "thread.resume", thread_id: answer.thread_id });
      if (followed.type === "error")
        this.fail([
          {
            invariant: "answers",
            detail: `the observer could not follow ${answer.thread_id}: ${followed.message}`,
          },
        ]);
    }
    if (answer.type === "ack" && body.type === "thread.delete") this.deleted.add(String(body.thread_id));
    return answer;
  }

  /** What a run did, in counts of the observer's events by type (for `SPARK_EXPLORE_VERBOSE`). */
  summary(): string {
    const counts = new Map<string, number>();
    for (const events of this.observer.received.values())
      for (const event of events) counts.set(event.type, (counts.get(event.type) ?? 0) + 1);
    const requests = `${this.requests.length} model requests, ${this.threads.length} threads`;
    return `${requests}; ${[...counts].map(([type, n]) => `${type} ${n}`).join(", ")}`;
  }

  /** The cheap invariants, after every step. */
  check(): void {
    const defects: Defect[] = [];
    for (const client of [this.observer, ...this.clients])
      for (const [threadId, events] of client.received)
        defects.push(...seqDefects(client.name, threadId, events));
    for (const threadId of this.threads)
      defects.push(...turnDefects(threadId, this.stream(threadId)).defects);
    defects.push(...inputDefects(this.sent, this.requests, this.observer.received, false));
    this.fail(defects);
  }

  /**
   * Brings the world to rest (approvals denied, turns ended or, with a real model, interrupted),
   * then checks every invariant: views, transcripts, steers, files, leaks.
   */
  async settle(): Promise<void> {
    const hosted = () => [...this.world.threads().values()];
    if (!this.options.waitForTurns) for (const { thread } of hosted()) thread.interrupt();
    const answered = new Set<string>();
    await this.until("every thread idle (turns-end)", "turns-end", () => {
      for (const threadId of this.threads) {
        for (const approval of this.observer.views.get(threadId)?.approvals ?? []) {
          if (answered.has(approval.approval_id)) continue;
          answered.add(approval.approval_id);
          void this.observer.request({
            type: "approval.respond",
            thread_id: threadId,
            approval_id: approval.approval_id,
            approved: false,
          });
        }
      }
      return hosted().every(({ thread }) => !thread.busy && thread.queuedTurns === 0);
    });
    // Every connected follower has every event the idle threads published once its count caught up.
    const followers = [this.observer, ...this.clients];
    await this.until("every follower caught up", "turns-end", () =>
      hosted().every(({ thread, seq }) =>
        followers.every(
          (client) =>
            !client.connected ||
            !client.subscribed.has(thread.info.id) ||
            (client.views.get(thread.info.id)?.lastSeq ?? -1) >= seq,
        ),
      ),
    );
    await this.world.source.flush();
    this.check();
    const defects: Defect[] = [];
    defects.push(...inputDefects(this.sent, this.requests, this.observer.received, true));
    for (const threadId of this.threads) {
      const { running } = turnDefects(threadId, this.stream(threadId));
      if (running.length > 0)
        defects.push({ invariant: "turns-end", detail: `${threadId}: turns ${running} never ended` });
    }
    defects.push(...(await this.viewDefects()));
    const files = fileDefects(this.observer.received, EXPLORE_FILE);
    defects.push(...files.defects);
    const onDisk = await this.world.files();
    const expected = [...files.present].sort();
    if (JSON.stringify(onDisk) !== JSON.stringify(expected))
      defects.push({
        invariant: "rewind-files",
        detail: `files on disk [${onDisk}], expected [${expected}]`,
      });
    defects.push(...(await this.leakDefects()));
    this.fail(defects);
  }

  /** Closes every client and checks nothing of them or their threads is kept once all are idle. */
  async finish(): Promise<void> {
    for (const client of [...this.clients, this.observer]) client.close();
    await this.until("the host saw every client go", "no-leaks", () => this.world.sockets.size === 0);
    const defects: Defect[] = [];
    if (this.world.hostClients() !== 0)
      defects.push({
        invariant: "no-leaks",
        detail: `the host still lists ${this.world.hostClients()} clients`,
      });
    this.world.host.evictIdle(Date.now() + 24 * 60 * 60_000);
    if (this.world.host.size !== 0)
      defects.push({
        invariant: "no-leaks",
        detail: `${this.world.host.size} threads still hosted with no client`,
      });
    if (this.world.liveSessions() !== 0)
      defects.push({
        invariant: "no-leaks",
        detail: `${this.world.liveSessions()} sessions still live after release`,
      });
    this.fail(defects);
  }

  /** Throws the defects of invariants not skipped. */
  fail(defects: Defect[]): void {
    const kept = defects.filter((defect) => !this.skip.has(defect.invariant));
    if (kept.length > 0) throw new InvariantViolation(kept);
  }

  /** Resolves once `holds()` is true, checked on every change the world or a client reports. */
  until(what: string, invariant: InvariantName, holds: () => boolean): Promise<void> {
    if (holds()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const onChange = () => {
        if (!holds()) return;
        clearTimeout(timer);
        this.world.changes.off("change", onChange);
        resolve();
      };
      const timer = setTimeout(() => {
        this.world.changes.off("change", onChange);
        const defect = { invariant, detail: `not reached within ${this.deadlineMs} ms: ${what}` };
        if (this.skip.has(invariant)) resolve();
        else reject(new InvariantViolation([defect]));
      }, this.deadlineMs);
      this.world.changes.on("change", onChange);
    });
  }

  private async viewDefects(): Promise<Defect[]> {
    const defects: Defect[] = [];
    const hosted = this.world.threads();
    let rewoundToSteer = false;
    const compare = (invariant: InvariantName, what: string, a: string[], b: string[]) => {
      const difference = firstDifference(a, b);
      if (!difference) return;
      // Both follow from a steer recorded before the reply it interrupted (see transcript-order).
      const misordered = difference.reordered || rewoundToSteer;
      const kind = misordered && invariant === "view-equals-transcript" ? "transcript-order" : invariant;
      const note = rewoundToSteer ? " (after a rewind to a steer)" : "";
      defects.push({ invariant: kind, detail: `${what}${note} ${difference.text}` });
    };
    for (const threadId of this.threads) {
      rewoundToSteer = steerRewound(this.stream(threadId));
      if (this.deleted.has(threadId)) continue;
      const observed = this.observer.views.get(threadId);
      if (!observed) continue;
      const lines = viewLines(observed);
      for (const client of this.clients) {
        const view = client.views.get(threadId);
        if (client.subscribed.has(threadId) && view)
          compare(
            "view-equals-observer",
            `${client.name}'s view of ${threadId} vs the observer's:`,
            viewLines(view),
            lines,
          );
      }
      const live = hosted.get(threadId);
      if (live)
        compare(
          "view-equals-transcript",
          `the view of ${threadId} vs its live items:`,
          lines,
          itemLines(live.thread.history),
        );
      const saved = await readSession(path.join(this.world.sessions, `${threadId}.jsonl`)).catch(() => null);
      compare(
        "view-equals-transcript",
        `the view of ${threadId} vs its transcript:`,
        lines,
        itemLines(saved?.items ?? []),
      );
    }
    return defects;
  }

  private async leakDefects(): Promise<Defect[]> {
    const connected = [this.observer, ...this.clients].filter((client) => client.connected);
    await this.until(
      "the host saw every closed client go",
      "no-leaks",
      () => this.world.sockets.size === connected.length,
    );
    const defects: Defect[] = [];
    if (this.world.hostClients() !== connected.length)
      defects.push({
        invariant: "no-leaks",
        detail: `the host lists ${this.world.hostClients()} clients, ${connected.length} are connected`,
      });
    const hosted = this.world.threads();
    const expected = this.threads.filter((id) => !this.deleted.has(id));
    const held = [...hosted.keys()];
    if (JSON.stringify([...held].sort()) !== JSON.stringify([...expected].sort()))
      defects.push({
        invariant: "no-leaks",
        detail: `the host holds [${held}], the clients opened [${expected}]`,
      });
    if (this.world.liveSessions() !== hosted.size)
      defects.push({
        invariant: "no-leaks",
        detail: `${this.world.liveSessions()} live sessions for ${hosted.size} hosted threads`,
      });
    for (const [threadId, { subscribers }] of hosted) {
      const following = connected.filter((client) => client.subscribed.has(threadId)).length;
      if (subscribers.size !== following)
        defects.push({
          invariant: "no-leaks",
          detail: `${threadId} has ${subscribers.size} subscribers, ${following} connected clients follow it`,
        });
    }
    return defects;
  }
}

/** Whether the thread was rewound to a steer's user message (`turn.steered`, then its message). */
function steerRewound(events: readonly StampedEvent[]): boolean {
  const steers = new Set(events.flatMap((event) => (event.type === "turn.steered" ? [event.input] : [])));
  const ids = new Set(
    events.flatMap((event) =>
      event.type === "item.completed" && event.item.type === "user_message" && steers.has(event.item.text)
        ? [event.item.id]
        : [],
    ),
  );
  return events.some((event) => event.type === "thread.rewound" && ids.has(event.item_id));
}
