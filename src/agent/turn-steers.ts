import type { ServerEvent, SteerOutcome } from "../client/responses-client.js";

/** Where one steer of a turn is on its way to the model. */
type SteerState =
  /** Its `@` mentions are being read; it is sent once they are, after the steers before it. */
  | "reading"
  /** Sent to the running response; its answer has not come. */
  | "sending"
  /** For the turn's next request: sent while no response ran, or refused by the one that did. */
  | "waiting"
  /** In the request being sent now. */
  | "carried"
  /** Accepted by the server: a successor of the running response carries it. */
  | "accepted"
  | "delivered"
  /** Reported as never sent (the turn ended first). */
  | "reported";

interface Steer {
  /** As the person wrote it: what the conversation records. */
  input: string;
  /** What the model gets: the input and the files its `@` mentions attach. */
  content: string;
  state: SteerState;
  /** Once accepted: the server's steer id (WebSocket) or its successor's response id (HTTP). */
  id: string | null;
}

/**
 * A turn's steers, from the moment each is sent until it reaches the model or is reported as not
 * sent. A steer reaches the model when a response whose input carries it starts: a steered
 * successor (after the partial reply it interrupted), or the turn's next request (after the tool
 * outputs it waited for). Only then is it part of the conversation, so the items, the transcript
 * and a resumed session hold it where the model read it, and one that never got there is not in them.
 */
export class TurnSteers {
  private readonly steers: Steer[] = [];
  private readonly answers = new Set<Promise<void>>();
  /** What the running stream said of accepted steers (WebSocket), by steer id. */
  private readonly wire = new Map<string, "accepted" | "held" | "dropped">();

  /** The last steer still reading its mentions: later steers are sent after it, in order. */
  private reading: Promise<void> | null = null;

  /** A steer sent to the running response: `outcome` is the server's answer. */
  sent(input: string, outcome: Promise<SteerOutcome>): void {
    const steer: Steer = { input, content: input, state: "sending", id: null };
    this.steers.push(steer);
    this.track(this.follow(steer, outcome));
  }

  /** A steer for the turn's next request (no response runs now). */
  wait(input: string): void {
    this.steers.push({ input, content: input, state: "waiting", id: null });
  }

  /** Whether a steer is still reading its mentions (a later steer must then go {@link after} it). */
  get busy(): boolean {
    return this.reading !== null;
  }

  /**
   * A steer sent once `content` (the input with the files its `@` mentions attach) is ready and
   * every steer before it was sent: `send` sends it to the running response, or returns null when
   * none runs (it waits for the turn's next request, like {@link wait}).
   */
  after(
    input: string,
    content: Promise<string>,
    send: (content: string) => Promise<SteerOutcome> | null,
  ): void {
    const steer: Steer = { input, content: input, state: "reading", id: null };
    this.steers.push(steer);
    const ready = (this.reading ?? Promise.resolve()).then(() => content);
    const done: Promise<void> = ready.then((text) => {
      steer.content = text;
      if (steer.state !== "reading") return; // the turn ended first, and said so
      const outcome = send(text);
      if (outcome === null) steer.state = "waiting";
      else {
        steer.state = "sending";
        return this.follow(steer, outcome);
      }
    });
    const sentOn = done
      .catch(() => {
        if (steer.state === "reading") steer.state = "waiting";
      })
      .then(() => {
        if (this.reading === sentOn) this.reading = null;
      });
    this.reading = sentOn;
    this.track(sentOn);
  }

  /** Until `work` settles, {@link answered} waits for it. */
  private track(work: Promise<void>): void {
    const tracked: Promise<void> = work.then(() => {
      this.answers.delete(tracked);
    });
    this.answers.add(tracked);
  }

  /** Follows the server's answer to `steer`. */
  private follow(steer: Steer, outcome: Promise<SteerOutcome>): Promise<void> {
    // "pending" (over HTTP) leaves the input to the next request, as a refusal does.
    return outcome.then(
      (answer) => {
        if (answer.status === "accepted") {
          steer.state = "accepted";
          steer.id = answer.id;
        } else steer.state = "waiting";
      },
      () => {
        steer.state = "waiting";
      },
    );
  }

  /** Whether steers wait for the turn's next request. */
  get waiting(): boolean {
    return this.steers.some((steer) => steer.state === "waiting");
  }

  /** What the waiting steers say to the model, now carried by the request being sent; they reach it as it starts. */
  carry(): string[] {
    return this.steers.flatMap((steer) => {
      if (steer.state !== "waiting") return [];
      steer.state = "carried";
      return [steer.content];
    });
  }

  /** Resolves once no steer waits for its answer (more may be sent meanwhile). */
  async answered(): Promise<void> {
    while (this.answers.size > 0) await Promise.all(this.answers);
  }

  /**
   * Follows the stream's news of accepted steers (WebSocket): `response.steer.accepted`,
   * `response.steer.failed` (a cancel came before the successor: dropped) and
   * `response.steer.pending` (the steered response waits for tool outputs: the server adds the
   * input to the next request chained from it).
   */
  observe(event: ServerEvent): void {
    if (event.type === "response.steer.accepted") this.wire.set(event.steer.id, "accepted");
    else if (event.type === "response.steer.failed" && event.steer.id !== undefined)
      this.wire.set(event.steer.id, "dropped");
    else if (event.type === "response.steer.pending") this.wire.set(event.steer.id, "held");
  }

  /**
   * Response `responseId` started: returns the steers that reached the model with it, in the order
   * they were sent. `first`: the first response of a request, which carries the waiting steers
   * and those the server held for it; otherwise a steered successor, which carries the steers
   * accepted before it.
   */
  async started(responseId: string, first: boolean): Promise<string[]> {
    const accepted = new Set([...this.wire].flatMap(([id, news]) => (news === "accepted" ? [id] : [])));
    const held = new Set([...this.wire].flatMap(([id, news]) => (news === "held" ? [id] : [])));
    // An accepted steer's answer may still be on its way to `sent` (it races the stream's events).
    if (this.answers.size > 0) await Promise.all([...this.answers]);
    const delivered = this.steers.filter((steer) => {
      if (first && steer.state === "carried") return true;
      if (steer.state !== "accepted" || steer.id === null) return false;
      if (first) return held.has(steer.id);
      return accepted.has(steer.id) || steer.id === responseId;
    });
    for (const steer of delivered) {
      steer.state = "delivered";
      if (steer.id !== null) this.wire.delete(steer.id);
    }
    return delivered.map((steer) => steer.input);
  }

  /**
   * The stream ended: a steer accepted on it whose successor never started will not start one
   * now (it is reported at the turn's end); the ones the server holds wait for the next request.
   */
  streamEnded(): void {
    for (const [id, news] of this.wire) if (news !== "held") this.wire.delete(id);
  }

  /** Whether the server holds steers for the next request chained from the last response. */
  get held(): boolean {
    return this.steers.some(
      (steer) => steer.state === "accepted" && steer.id !== null && this.wire.get(steer.id) === "held",
    );
  }

  /**
   * The chain starts over (compaction): the server will not add the steers it holds to a new
   * chain, so they wait for the turn's next request like a refused steer.
   */
  releaseHeld(): void {
    for (const steer of this.steers) {
      if (steer.state !== "accepted" || steer.id === null || this.wire.get(steer.id) !== "held") continue;
      this.wire.delete(steer.id);
      steer.state = "waiting";
      steer.id = null;
    }
  }

  /** The steers that never reached the model, in the order they were sent; they are forgotten. */
  takeUndelivered(): string[] {
    const undelivered = this.steers.filter((steer) => steer.state !== "delivered");
    for (const steer of undelivered) steer.state = "reported";
    this.steers.length = 0;
    this.wire.clear();
    return undelivered.map((steer) => steer.input);
  }
}
