import fc from "fast-check";
import type { RewindRestore } from "../../protocol/agent.js";
import type { ExploreRun } from "./explore-run.js";

/**
 * The requests the host explorer sends, as fast-check commands. The model is only what decides
 * which commands may run (which faces are connected); everything else is resolved against the real
 * run when the command runs: `thread` and `item` are indexes taken modulo what exists then, so a
 * shrunk sequence still means something.
 */
export interface ExploreModel {
  connected: boolean[];
}

type Command = fc.AsyncCommand<ExploreModel, ExploreRun>;

/** Base of the commands of one face: it must be connected; `after` checks the cheap invariants. */
abstract class FaceCommand implements Command {
  constructor(readonly face: number) {}
  check(model: Readonly<ExploreModel>): boolean {
    return model.connected[this.face]!;
  }
  async run(model: ExploreModel, run: ExploreRun): Promise<void> {
    await this.act(model, run);
    run.check();
  }
  protected abstract act(model: ExploreModel, run: ExploreRun): Promise<void>;
  abstract toString(): string;
  protected client(run: ExploreRun) {
    return run.clients[this.face]!;
  }
}

/** A face's request about one thread (`thread` indexes the live threads); nothing when none exists. */
abstract class ThreadCommand extends FaceCommand {
  constructor(
    face: number,
    readonly thread: number,
  ) {
    super(face);
  }
  protected async act(_model: ExploreModel, run: ExploreRun): Promise<void> {
    const threadId = run.threadAt(this.thread);
    if (threadId) await this.on(run, threadId);
  }
  protected abstract on(run: ExploreRun, threadId: string): Promise<void>;
}

class StartThread extends FaceCommand {
  protected async act(_model: ExploreModel, run: ExploreRun): Promise<void> {
    await run.request(this.client(run), { type: "thread.start" });
  }
  toString() {
    return `start(${this.face})`;
  }
}

export type TurnKind = "say" | "edit" | "run";

class StartTurn extends ThreadCommand {
  constructor(
    face: number,
    thread: number,
    readonly kind: TurnKind,
    readonly words: number,
  ) {
    super(face, thread);
  }
  protected async on(run: ExploreRun, threadId: string): Promise<void> {
    await run.request(this.client(run), {
      type: "turn.start",
      thread_id: threadId,
      input: turnInput(run, this),
    });
  }
  toString() {
    return `turn(${this.face}, ${this.thread}, ${this.kind}${this.kind === "say" ? ` ${this.words}` : ""})`;
  }
}

function turnInput(run: ExploreRun, turn: { kind: TurnKind; words: number }): string {
  const tag = run.tag("t");
  if (turn.kind === "edit") return `${tag} edit ${run.tag("f")}`;
  if (turn.kind === "run") return `${tag} run`;
  return `${tag} say ${turn.words}`;
}

/** `turn.steer` or `turn.queue`: the input is recorded to be delivered exactly once (or reported). */
class SendInput extends ThreadCommand {
  constructor(
    face: number,
    thread: number,
    readonly kind: "steer" | "queue",
    readonly words: number,
  ) {
    super(face, thread);
  }
  protected async on(run: ExploreRun, threadId: string): Promise<void> {
    const text = `${run.tag(this.kind === "steer" ? "s" : "q")} say ${this.words}`;
    const type = this.kind === "steer" ? "turn.steer" : "turn.queue";
    const answer = await run.request(this.client(run), { type, thread_id: threadId, input: text });
    if (answer.type === "ack") run.sent.push({ kind: this.kind, threadId, text });
  }
  toString() {
    return `${this.kind}(${this.face}, ${this.thread}, say ${this.words})`;
  }
}

class Interrupt extends ThreadCommand {
  protected async on(run: ExploreRun, threadId: string): Promise<void> {
    await run.request(this.client(run), { type: "turn.interrupt", thread_id: threadId });
  }
  toString() {
    return `interrupt(${this.face}, ${this.thread})`;
  }
}

/** Answers the oldest approval the face sees waiting on the thread; nothing when none waits. */
class Approve extends ThreadCommand {
  constructor(
    face: number,
    thread: number,
    readonly approved: boolean,
  ) {
    super(face, thread);
  }
  protected async on(run: ExploreRun, threadId: string): Promise<void> {
    const waiting = this.client(run).views.get(threadId)?.approvals[0];
    if (!waiting) return;
    await run.request(this.client(run), {
      type: "approval.respond",
      thread_id: threadId,
      approval_id: waiting.approval_id,
      approved: this.approved,
    });
  }
  toString() {
    return `${this.approved ? "approve" : "deny"}(${this.face}, ${this.thread})`;
  }
}

/** A user message the observer saw on the thread, by index (of the ones it holds now). */
function userMessageAt(run: ExploreRun, threadId: string, index: number): string | null {
  const users = (run.observer.views.get(threadId)?.entries ?? []).filter((entry) => entry.kind === "user");
  return users.length === 0 ? null : users[index % users.length]!.id;
}

class Rewind extends ThreadCommand {
  constructor(
    face: number,
    thread: number,
    readonly item: number,
    readonly restore: RewindRestore,
  ) {
    super(face, thread);
  }
  protected async on(run: ExploreRun, threadId: string): Promise<void> {
    const itemId = userMessageAt(run, threadId, this.item);
    if (!itemId) return;
    await run.request(this.client(run), {
      type: "thread.rewind",
      thread_id: threadId,
      item_id: itemId,
      restore: this.restore,
    });
  }
  toString() {
    return `rewind(${this.face}, ${this.thread}, user ${this.item}, ${this.restore})`;
  }
}

class Fork extends ThreadCommand {
  constructor(
    face: number,
    thread: number,
    /** A user message to fork at, by index; null: the whole thread. */
    readonly item: number | null,
  ) {
    super(face, thread);
  }
  protected async on(run: ExploreRun, threadId: string): Promise<void> {
    const itemId = this.item === null ? null : userMessageAt(run, threadId, this.item);
    await run.request(this.client(run), {
      type: "thread.fork",
      thread_id: threadId,
      ...(itemId ? { item_id: itemId } : {}),
    });
  }
  toString() {
    return `fork(${this.face}, ${this.thread}${this.item === null ? "" : `, user ${this.item}`})`;
  }
}

/** `thread.resume` from the face's view: following a thread, or resuming one it follows. */
class Resume extends ThreadCommand {
  protected async on(run: ExploreRun, threadId: string): Promise<void> {
    const client = this.client(run);
    const answer = await client.resume(threadId);
    if (answer.type === "error" && answer.code !== "not_found")
      run.fail([
        { invariant: "answers", detail: `thread.resume answered ${answer.code}: ${answer.message}` },
      ]);
  }
  toString() {
    return `resume(${this.face}, ${this.thread})`;
  }
}

/** Closing a session for good: `thread.delete` (refused while a turn runs). */
class Delete extends ThreadCommand {
  protected async on(run: ExploreRun, threadId: string): Promise<void> {
    await run.request(this.client(run), { type: "thread.delete", thread_id: threadId });
  }
  toString() {
    return `delete(${this.face}, ${this.thread})`;
  }
}

/** The face goes away: cut (`terminate`) or closed cleanly. */
class Disconnect extends FaceCommand {
  constructor(
    face: number,
    readonly clean: boolean,
  ) {
    super(face);
  }
  protected async act(model: ExploreModel, run: ExploreRun): Promise<void> {
    if (this.clean) this.client(run).close();
    else this.client(run).disconnect();
    model.connected[this.face] = false;
  }
  toString() {
    return `${this.clean ? "close" : "disconnect"}(${this.face})`;
  }
}

/** The face comes back and resumes every thread it follows from its last event. */
class Reconnect implements Command {
  constructor(readonly face: number) {}
  check(model: Readonly<ExploreModel>): boolean {
    return !model.connected[this.face];
  }
  async run(model: ExploreModel, run: ExploreRun): Promise<void> {
    await run.clients[this.face]!.connect();
    model.connected[this.face] = true;
    run.check();
  }
  toString() {
    return `reconnect(${this.face})`;
  }
}

/** Waits for rest (approvals denied) and checks every invariant. */
class Settle implements Command {
  check(): boolean {
    return true;
  }
  async run(_model: ExploreModel, run: ExploreRun): Promise<void> {
    await run.settle();
  }
  toString() {
    return "settle";
  }
}

export interface ExploreCommandsOptions {
  /** Commands per run at most. */
  maxCommands: number;
  /** Only what a real model can do (no scripted edits or commands): turns say words. */
  textOnly?: boolean;
  /** `fc.commands`' replay path of a failure being replayed (printed with its seed). */
  replayPath?: string | undefined;
}

/** The command generator of one run. */
export function exploreCommands(options: ExploreCommandsOptions) {
  const face = fc.integer({ min: 0, max: 2 });
  const thread = fc.nat({ max: 7 });
  const words = fc.integer({ min: 1, max: 60 });
  const kind: fc.Arbitrary<TurnKind> = options.textOnly
    ? fc.constant("say")
    : fc.constantFrom<TurnKind>("say", "say", "edit", "run");
  return fc.commands(
    [
      face.map((f) => new StartThread(f)),
      fc.tuple(face, thread, kind, words).map(([f, t, k, w]) => new StartTurn(f, t, k, w)),
      fc.tuple(face, thread, kind, words).map(([f, t, k, w]) => new StartTurn(f, t, k, w)),
      fc.tuple(face, thread, words).map(([f, t, w]) => new SendInput(f, t, "steer", w)),
      fc.tuple(face, thread, words).map(([f, t, w]) => new SendInput(f, t, "steer", w)),
      fc.tuple(face, thread, words).map(([f, t, w]) => new SendInput(f, t, "queue", w)),
      fc.tuple(face, thread).map(([f, t]) => new Interrupt(f, t)),
      fc.tuple(face, thread, fc.boolean()).map(([f, t, yes]) => new Approve(f, t, yes)),
      fc
        .tuple(
          face,
          thread,
          fc.nat({ max: 5 }),
          fc.constantFrom<RewindRestore>("code", "conversation", "both"),
        )
        .map(([f, t, i, r]) => new Rewind(f, t, i, r)),
      fc.tuple(face, thread, fc.option(fc.nat({ max: 5 }))).map(([f, t, i]) => new Fork(f, t, i)),
      fc.tuple(face, thread).map(([f, t]) => new Resume(f, t)),
      fc.tuple(face, thread).map(([f, t]) => new Delete(f, t)),
      fc.tuple(face, fc.boolean()).map(([f, clean]) => new Disconnect(f, clean)),
      face.map((f) => new Reconnect(f)),
      fc.constant(new Settle()),
    ],
    {
      maxCommands: options.maxCommands,
      size: "max",
      ...(options.replayPath ? { replayPath: options.replayPath } : {}),
    },
  );
}

/** The model a run starts from: every face connected. */
export function initialModel(): ExploreModel {
  return { connected: [true, true, true] };
}
