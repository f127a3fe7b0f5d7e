import type { RewindRestore, ThreadItem } from "../protocol/agent.js";
import { SparkError } from "../protocol/errors.js";
import type { Checkpoints } from "./checkpoints.js";
import { historyFromItems } from "./conversation-history.js";
import type { EditJournal } from "./edit-journal.js";
import type { ItemLog } from "./item-log.js";
import type { ResponseChain } from "./response-chain.js";
import type { Workspace } from "./workspace.js";

/** What a rewind did, as `thread.rewound` reports it. */
export interface Rewound {
  item_id: string;
  restore: RewindRestore;
  /** Files restored, relative to the workspace. */
  paths: string[];
  /** The text of the user message rewound to (a face offers it for editing). */
  text: string;
}

/**
 * Takes a thread back to just before one of its turns (named by the user message that starts it):
 * its code through the turn checkpoints, its conversation by cutting the items and moving the
 * response chain back (see ResponseChain.rewind), or both, code first. The caller makes sure no
 * turn runs.
 */
export class ThreadRewind {
  constructor(
    private readonly parts: {
      log: ItemLog;
      chain: ResponseChain;
      journal: EditJournal;
      checkpoints: Checkpoints;
      workspace: Workspace;
    },
  ) {
    const { journal, log, checkpoints } = parts;
    journal.listen({
      // An edit belongs to the turn of the newest user message (a steer starts a turn of its own).
      recorded: (entry) => {
        const turn = log.items.findLast((item) => item.type === "user_message");
        if (turn) checkpoints.recorded(turn.id, entry);
      },
      restored: (entry, files) => checkpoints.restored(entry, files),
    });
  }

  /** Throws a SparkError `not_found` (unknown `itemId`) or 409 (code refused, nothing touched). */
  async rewind(itemId: string, restore: RewindRestore): Promise<Rewound> {
    const { log, chain, journal, checkpoints, workspace } = this.parts;
    const index = log.items.findIndex((item) => item.type === "user_message" && item.id === itemId);
    if (index === -1) {
      throw new SparkError("not_found", `No user message ${itemId} in this thread.`, { param: "item_id" });
    }
    const message = log.items[index] as Extract<ThreadItem, { type: "user_message" }>;
    const turns = new Set(
      log.items.slice(index).flatMap((item) => (item.type === "user_message" ? [item.id] : [])),
    );
    let paths: string[] = [];
    if (restore !== "conversation") {
      const restored = await checkpoints.rewind(turns);
      journal.discard(restored.entries);
      paths = restored.paths.map((path) => workspace.relative(path));
    }
    if (restore !== "code") {
      log.truncate(index);
      const kept = log.items;
      chain.rewind(itemId, historyFromItems(kept), turns);
      if (restore === "conversation") {
        const previous = kept.findLast((item) => item.type === "user_message");
        checkpoints.moveTo(turns, previous?.id ?? null);
      }
    }
    return { item_id: itemId, restore, paths, text: message.text };
  }
}
