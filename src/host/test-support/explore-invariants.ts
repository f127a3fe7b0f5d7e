import type { Entry, StampedEvent, ThreadView } from "../../client-core/thread-view.js";
import { entryOf } from "../../client-core/view-items.js";
import type { ThreadItem } from "../../protocol/agent.js";

/**
 * The host explorer's invariants, each a pure function of what was observed that returns the
 * defects it found (empty: it holds). Names are stable: a failing run names the invariant.
 */

export interface Defect {
  invariant: InvariantName;
  detail: string;
}

export const INVARIANTS = {
  "seq-contiguous": "each client receives a thread's events with no gap in seq",
  "ended-turn-items-terminal":
    "every item a turn started is completed (not running) before its turn.completed",
  "nothing-after-end": "no event of a turn arrives after its turn.completed",
  "turns-end": "every started turn ends (settle reaches an idle host)",
  "view-equals-observer": "each follower's view equals the observer's view of the thread",
  "view-equals-transcript": "the observer's view equals the transcript replayed and the live thread's items",
  "transcript-order":
    "the transcript and the live thread hold the items in the order the faces showed them (the same items in another order breaks only this)",
  "steer-once":
    "a steer or queued message reaches the model at most once per request, and exactly once or is reported",
  "steer-lost-on-interrupt":
    "a steer shown in the conversation (turn.steered) of a turn then interrupted reached the model, or a notice said it did not",
  "unsent-steer-sent-later":
    "a steer a notice reported as not sent never reaches the model afterwards (the person is told to send it again)",
  "rewind-files":
    "a code rewind restores exactly the files the thread's later patches added, and the disk matches",
  "no-leaks": "no thread, subscription or client is kept past its owner",
  answers: "every request is answered (ack or an expected refusal) within the deadline",
} as const;

export type InvariantName = keyof typeof INVARIANTS;

/**
 * Seq numbers of one client's stream of one thread: none skipped, unless the stream starts over. A
 * repeat is allowed: a face that resumes a thread it already follows gets what it had again, and
 * the reducer drops it (`seq` at or below the view's).
 */
export function seqDefects(client: string, threadId: string, events: readonly StampedEvent[]): Defect[] {
  const defects: Defect[] = [];
  let last = -1;
  let epoch: string | null = null;
  for (const event of events) {
    const startsOver =
      event.type === "thread.started" ||
      (event.type === "thread.history" && event.reset === true) ||
      (epoch !== null && event.epoch !== epoch);
    if (!startsOver && event.seq > last + 1) {
      defects.push({
        invariant: "seq-contiguous",
        detail: `${client} got seq ${event.seq} (${event.type}) of ${threadId} after seq ${last}`,
      });
    }
    last = startsOver ? event.seq : Math.max(last, event.seq);
    epoch = event.epoch;
  }
  return defects;
}

/**
 * Over one complete stream of a thread (the observer's): the items each turn started are all
 * completed, and not `running`, before the turn's `turn.completed`; nothing of the turn comes after.
 * Returns the turns still running at the end too.
 */
export function turnDefects(
  threadId: string,
  events: readonly StampedEvent[],
): { defects: Defect[]; running: string[] } {
  const defects: Defect[] = [];
  const open = new Map<string, Map<string, string>>();
  const ended = new Set<string>();
  for (const event of events) {
    const turnId = "turn_id" in event ? event.turn_id : undefined;
    if (turnId !== undefined && ended.has(turnId)) {
      defects.push({
        invariant: "nothing-after-end",
        detail: `${threadId}: ${event.type} (seq ${event.seq}) of turn ${turnId} after its turn.completed; the thread's events: ${describe(events)}`,
      });
    }
    switch (event.type) {
      case "turn.started":
        open.set(event.turn_id, new Map());
        break;
      case "item.started":
        open.get(event.turn_id)?.set(event.item.id, event.item.type);
        break;
      case "item.completed": {
        open.get(event.turn_id)?.delete(event.item.id);
        const { item } = event;
        if (item.type === "tool_call" && item.status === "running") {
          defects.push({
            invariant: "ended-turn-items-terminal",
            detail: `${threadId}: tool call ${item.id} (${item.name}) completed with status running`,
          });
        }
        break;
      }
      case "turn.completed": {
        const items = open.get(event.turn_id);
        if (items && items.size > 0) {
          const list = [...items].map(([id, type]) => `${type} ${id}`).join(", ");
          defects.push({
            invariant: "ended-turn-items-terminal",
            detail: `${threadId}: turn ${event.turn_id} ended ${event.status} with items never completed: ${list}`,
          });
        }
        open.delete(event.turn_id);
        ended.add(event.turn_id);
        break;
      }
      default:
        break;
    }
  }
  return { defects, running: [...open.keys()] };
}

/** What of an entry must be equal between views and transcripts (not how it is marked or timed). */
function comparable(entry: Entry): string {
  switch (entry.kind) {
    case "user":
      return `user ${entry.id} ${JSON.stringify(entry.text)}`;
    case "agent":
      return `agent ${entry.id} ${JSON.stringify(entry.text)}`;
    case "tool":
      return `tool ${entry.id} ${entry.item.name} ${entry.item.status} ${JSON.stringify(entry.item.arguments)}`;
    case "notice":
      return `notice ${entry.id} ${JSON.stringify(entry.text)}`;
    default: {
      const unknown: never = entry;
      return JSON.stringify(unknown);
    }
  }
}

/** A view's entries that items made (not the notices the reducer adds itself). */
export function viewLines(view: ThreadView): string[] {
  return view.entries.filter((entry) => !/^notice-\d+$/.test(entry.id)).map(comparable);
}

/** Items as a view shows them once they are complete (a transcript replayed, a thread's history). */
export function itemLines(items: readonly ThreadItem[]): string[] {
  return items
    .filter((item) => item.type !== "reasoning" || item.text !== "")
    .map((item) => comparable(entryOf(item, { completed: true, steer: false, existing: undefined })));
}

/**
 * The first difference between two line lists, or null when equal; `reordered` when both hold the
 * same lines in another order.
 */
export function firstDifference(
  a: readonly string[],
  b: readonly string[],
): { reordered: boolean; text: string } | null {
  const length = Math.max(a.length, b.length);
  for (let i = 0; i < length; i++) {
    if (a[i] === b[i]) continue;
    const reordered = JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());
    const lines = (list: readonly string[]) => list.map((line) => `\n    ${line}`).join("");
    return {
      reordered,
      text: `differ at ${i}: ${a[i] ?? "(nothing)"} vs ${b[i] ?? "(nothing)"}${lines(a)}\n  vs${lines(b)}`,
    };
  }
  return null;
}

/** A steer or queued message the explorer sent and the host acknowledged. */
export interface SentInput {
  kind: "steer" | "queue";
  threadId: string;
  text: string;
}

/**
 * In every model request a sent input is among the user messages at most once; at settle, each is
 * either delivered (in some request), reported not sent (a notice quoting it), or was queued and
 * then dropped by an interrupt — and never both delivered and reported not sent.
 */
export function inputDefects(
  sent: readonly SentInput[],
  requests: readonly string[][],
  streams: ReadonlyMap<string, readonly StampedEvent[]>,
  settled: boolean,
): Defect[] {
  const defects: Defect[] = [];
  for (const input of sent) {
    const counts = requests.map((users) => users.filter((text) => text === input.text).length);
    const most = Math.max(0, ...counts);
    if (most > 1) {
      defects.push({
        invariant: "steer-once",
        detail: `${input.kind} "${input.text}" was sent to the model ${most} times in one request`,
      });
    }
    if (!settled) continue;
    const delivered = most > 0;
    const events = streams.get(input.threadId) ?? [];
    const reported = events.some(
      (event) =>
        event.type === "item.completed" &&
        event.item.type === "notice" &&
        event.item.text.includes(`"${input.text}"`),
    );
    const dropped = droppedByInterrupt(events, input.text);
    if (delivered && reported)
      defects.push({
        invariant: "unsent-steer-sent-later",
        detail: `${input.kind} "${input.text}" was reported not sent, yet the model got it: ${JSON.stringify(requests.filter((users) => users.includes(input.text)))}`,
      });
    if (!delivered && !reported && !dropped) {
      const shown = events.some(
        (event) =>
          event.type === "item.completed" &&
          event.item.type === "user_message" &&
          event.item.text === input.text,
      );
      const trail = events
        .filter((event) => event.type.startsWith("turn.") || event.type === "thread.rewound")
        .map(
          (event) =>
            `${event.type}${"status" in event ? ` ${event.status}` : ""}${"input" in event ? ` "${event.input}"` : ""}`,
        );
      defects.push({
        invariant:
          steeredTurnEnded(events, input.text) === "interrupted" ? "steer-lost-on-interrupt" : "steer-once",
        detail: `${input.kind} "${input.text}" never reached the model and nothing said so (${shown ? "shown" : "not shown"} as a user message; turns: ${trail.join(", ")}; the model got: ${JSON.stringify(requests)})`,
      });
    }
    const messages = new Set(
      events.flatMap((event) =>
        event.type === "item.completed" &&
        event.item.type === "user_message" &&
        event.item.text === input.text
          ? [event.item.id]
          : [],
      ),
    );
    if (messages.size > 1)
      defects.push({
        invariant: "steer-once",
        detail: `${input.kind} "${input.text}" shows as ${messages.size} user messages`,
      });
  }
  return defects;
}

/** How the turn that `text` steered (`turn.steered`) ended, if it did. */
function steeredTurnEnded(events: readonly StampedEvent[], text: string): string | undefined {
  const steered = events.find((event) => event.type === "turn.steered" && event.input === text);
  if (steered?.type !== "turn.steered") return undefined;
  const ended = events.find((event) => event.type === "turn.completed" && event.turn_id === steered.turn_id);
  return ended?.type === "turn.completed" ? ended.status : undefined;
}

/**
 * The input was queued (`turn.queued`) and a turn ended interrupted before it started, or it
 * started a turn that was interrupted: either way the person's interrupt took it back.
 */
function droppedByInterrupt(events: readonly StampedEvent[], text: string): boolean {
  let queued = false;
  let started: string | null = null;
  for (const event of events) {
    if (event.type === "turn.queued" && event.input === text) queued = true;
    else if (event.type === "turn.started" && event.input === text) {
      queued = false;
      started = event.turn_id;
    } else if (event.type === "turn.completed" && event.status === "interrupted") {
      if (queued || event.turn_id === started) return true;
    }
  }
  return false;
}

/**
 * The files code rewinds must restore, from the observer's streams: every explorer file a thread's
 * own patch added is present until a code rewind to a user message before that patch; the rewind
 * names exactly those (a fork's inherited patches are not its own to restore).
 */
export function fileDefects(
  streams: ReadonlyMap<string, readonly StampedEvent[]>,
  fileName: RegExp,
): {
  defects: Defect[];
  present: Set<string>;
} {
  const defects: Defect[] = [];
  const present = new Set<string>();
  for (const [threadId, events] of streams) {
    let items: { id: string; files: string[] }[] = [];
    for (const event of events) {
      if (event.type === "thread.started") items = [];
      else if (event.type === "thread.history")
        items = event.items.map((item) => ({ id: item.id, files: [] }));
      else if (event.type === "item.completed") {
        const { item } = event;
        const files =
          item.type === "tool_call" && item.status === "completed" && item.display?.kind === "diff"
            ? item.display.files.filter((f) => f.kind === "add" && fileName.test(f.path)).map((f) => f.path)
            : [];
        for (const file of files) present.add(file);
        items.push({ id: item.id, files });
      } else if (event.type === "thread.rewound") {
        const at = items.findIndex((item) => item.id === event.item_id);
        const restored =
          event.restore === "conversation" || at === -1
            ? []
            : items.slice(at).flatMap((item) => item.files.filter((file) => present.has(file)));
        const named = event.paths.filter((file) => fileName.test(file));
        if (JSON.stringify([...restored].sort()) !== JSON.stringify([...named].sort())) {
          defects.push({
            invariant: "rewind-files",
            detail: `${threadId}: rewind (${event.restore}) to ${event.item_id} restored [${named}], expected [${restored}]`,
          });
        }
        for (const file of restored) present.delete(file);
        if (at !== -1) {
          if (event.restore === "conversation" || event.restore === "both") items = items.slice(0, at);
          else items = items.map((item, i) => (i >= at ? { ...item, files: [] } : item));
        }
      }
    }
  }
  return { defects, present };
}

/** A stream in short: `seq type [input|status|item]`, for a defect's detail. */
function describe(events: readonly StampedEvent[]): string {
  return events
    .map((event) => {
      const what =
        "input" in event
          ? `"${event.input}"`
          : "status" in event
            ? event.status
            : "item" in event
              ? `${event.item.type}${event.item.type === "tool_call" ? ` ${event.item.name} ${event.item.status}` : ""}`
              : "approval_id" in event
                ? event.approval_id
                : "";
      return `${event.seq} ${event.type} ${what}`.trim();
    })
    .filter((line) => !line.includes("item.delta"))
    .join("; ");
}
