import type { ResponsesClient } from "../client/responses-client.js";
import { SparkError } from "../protocol/errors.js";
import { type ItemLog, newItemId, newTurnId } from "./item-log.js";
import { type ExpandedMentions, findMentions } from "./mentions/file-mentions.js";
import type { ActiveTurn, TurnOutcome } from "./turn-runner.js";

export interface TurnInboxOptions {
  client: ResponsesClient;
  log: ItemLog;
  /** Turns waiting behind the running one; beyond it `limit_reached`. Default: 32. */
  maxQueuedTurns?: number | undefined;
  /** UTF-8 bytes of the inputs waiting behind the running turn; beyond it `limit_reached`. Default: 4 MiB. */
  maxQueuedBytes?: number | undefined;
  /** Reads the files a steer's `@` mentions attach, as a turn's message attaches them. Default: none. */
  mentions?: (input: string) => Promise<ExpandedMentions>;
}

/** A turn waiting behind the running one, named from the moment it is queued. */
export interface QueuedTurn {
  id: string;
  input: string;
}

/**
 * What the person writes while a turn runs: steered into the running turn, or queued behind it
 * (bounded). A steer never vanishes: one the turn cannot take is queued or reported.
 */
export class TurnInbox {
  private readonly queue: QueuedTurn[] = [];

  constructor(private readonly options: TurnInboxOptions) {}

  /** Turns waiting behind the running one. */
  get length(): number {
    return this.queue.length;
  }

  /**
   * Throws `limit_reached` when the queue holds `maxQueuedTurns` turns or `maxQueuedBytes` bytes
   * already, counting `input`; nothing is dropped.
   */
  checkRoom(input: string): void {
    const maxTurns = this.options.maxQueuedTurns ?? 32;
    const maxBytes = this.options.maxQueuedBytes ?? 4 * 1024 * 1024;
    if (this.queue.length >= maxTurns) {
      throw new SparkError("limit_reached", `${maxTurns} turns are queued already; wait for one to start.`);
    }
    const bytes = this.queue.reduce(
      (sum, queued) => sum + Buffer.byteLength(queued.input),
      Buffer.byteLength(input),
    );
    if (bytes > maxBytes) {
      throw new SparkError(
        "limit_reached",
        `Queued inputs would take ${bytes} bytes, over the ${maxBytes}-byte limit; wait for a turn to start.`,
      );
    }
  }

  /** Queues `input` as a turn after the running one, and tells every face; returns the turn's id. */
  push(input: string): string {
    const turn = { id: newTurnId(), input };
    this.queue.push(turn);
    this.options.log.emit({ type: "turn.queued", turn_id: turn.id, input });
    return turn.id;
  }

  /** The next queued turn, if any. */
  shift(): QueuedTurn | undefined {
    return this.queue.shift();
  }

  clear(): void {
    this.queue.length = 0;
  }

  /**
   * Redirects the running `turn` with `input` (see AgentThread.steer). Its user message is recorded
   * once it reaches the model (see TurnSteers), where the model reads it.
   */
  steer(turn: ActiveTurn, input: string): void {
    if (turn.closed) {
      this.push(input);
      return;
    }
    this.options.log.emit({ type: "turn.steered", turn_id: turn.id, input });
    const { mentions, client, log } = this.options;
    if (mentions && (turn.steers.busy || findMentions(input).length > 0)) {
      // The files go to the model after the steer, as after a turn's message; the steer is
      // recorded as typed. Steers keep their order while a file is read.
      const content = mentions(input).then(
        (expanded) => {
          for (const text of expanded.notices)
            log.complete(turn.id, { type: "notice", id: newItemId(), text });
          return input + expanded.attachments;
        },
        () => input,
      );
      turn.steers.after(input, content, (text) => (turn.stream ? client.steer(turn.stream, text) : null));
      return;
    }
    if (turn.stream) turn.steers.sent(input, client.steer(turn.stream, input));
    else turn.steers.wait(input);
  }

  /** Tells every face that these steers of `turn` never reached the model. */
  reportUndelivered(turn: ActiveTurn, steers: string[], outcome?: TurnOutcome): void {
    const why = turn.controller.signal.aborted
      ? "the turn was interrupted"
      : outcome?.error?.code === "limit_reached"
        ? "the turn reached its limit of tool rounds"
        : outcome?.status === "failed"
          ? "the turn failed"
          : "the turn had ended";
    for (const steer of steers) {
      this.options.log.complete(turn.id, {
        type: "notice",
        id: newItemId(),
        text: `Not sent to the model (${why}): "${steer}". Send it again if it still applies.`,
      });
    }
  }
}
