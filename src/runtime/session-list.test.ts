import { mkdir, mkdtemp, realpath, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { Transcript } from "../agent/transcript.js";
import type { ThreadInfo } from "../protocol/agent.js";
import { listSavedSessions } from "./session-list.js";

function info(id: string, cwd: string, title = "New session"): ThreadInfo {
  return {
    id,
    title,
    cwd,
    model: "fast",
    createdAt: "2026-01-01T00:00:00.000Z",
    updatedAt: "2026-01-01T00:00:00.000Z",
  };
}

/** Writes a transcript of `thread` with these user messages (and an answer after each). */
async function save(dir: string, thread: ThreadInfo, messages: string[]): Promise<void> {
  const transcript = Transcript.start(dir, thread);
  messages.forEach((text, index) => {
    transcript.observe({
      type: "item.completed",
      turn_id: "t",
      item: { type: "user_message", id: `u${index}`, text },
    });
    transcript.observe({
      type: "item.completed",
      turn_id: "t",
      item: { type: "agent_message", id: `a${index}`, text: "ok" },
    });
  });
  await transcript.flush();
}

async function folders(): Promise<{ dir: string; root: string }> {
  const root = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-session-list-")));
  const dir = path.join(root, "sessions");
  await mkdir(dir);
  return { dir, root };
}

describe("listSavedSessions", () => {
  test("this workspace's sessions with a message, titled by their first line; damaged and unused ones left out", async () => {
    const { dir, root } = await folders();
    const here = path.join(root, "parser");
    await save(dir, info("thr_a", here), ["fix the parser\nit drops the last line", "and the tests"]);
    await save(dir, info("thr_named", here, "Parser cleanup"), ["x"]);
    await save(dir, info("thr_long", here), ["y".repeat(80)]);
    await save(dir, info("thr_unused", here), []);
    await save(dir, info("thr_other", path.join(root, "elsewhere")), ["not here"]);
    await writeFile(path.join(dir, "thr_garbage.jsonl"), "not json\n");

    const listed = await listSavedSessions({ dir, workspace: here });
    expect(Object.fromEntries(listed.map((session) => [session.id, [session.title, session.turns]]))).toEqual(
      {
        thr_a: ["fix the parser", 2],
        thr_named: ["Parser cleanup", 1],
        thr_long: [`${"y".repeat(59)}…`, 1],
      },
    );
    const all = await listSavedSessions({ dir });
    expect(all.map((session) => session.id).sort()).toEqual(["thr_a", "thr_long", "thr_named", "thr_other"]);
  });

  test("a folder whose name only begins like the workspace's is another workspace, not one of its worktrees", async () => {
    const { dir, root } = await folders();
    const here = path.join(root, "repo");
    const worktrees = path.join(root, "worktrees", "repo-1234");
    await save(dir, info("thr_main", here), ["main"]);
    await save(
      dir,
      { ...info("thr_tree", path.join(worktrees, "fix")), worktree: { name: "fix", branch: "spark/fix" } },
      ["in the worktree"],
    );
    await save(dir, info("thr_sibling", `${worktrees}-other/fix`), ["a sibling folder"]);
    await save(dir, info("thr_prefix", `${here}-copy`), ["a copy of the repo"]);

    const listed = await listSavedSessions({ dir, workspace: here, worktrees });
    expect(listed.map((session) => session.id).sort()).toEqual(["thr_main", "thr_tree"]);
    expect(listed.find((session) => session.id === "thr_tree")?.worktree).toBe("fix");
  });

  test("property: turns counts the messages a rewind left (a rewind takes back its message and all after it)", async () => {
    const { dir, root } = await folders();
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.oneof(fc.constant<"message">("message"), fc.nat(8)), { minLength: 1, maxLength: 12 }),
        async (steps) => {
          const id = `thr_p${++n}`;
          const transcript = Transcript.start(dir, info(id, root));
          const kept: string[] = [];
          let made = 0;
          for (const step of steps) {
            if (step === "message") {
              const item = { type: "user_message" as const, id: `u${++made}`, text: `m${made}` };
              transcript.observe({ type: "item.completed", turn_id: "t", item });
              kept.push(item.id);
            } else if (kept.length > 0) {
              const at = step % kept.length;
              transcript.observe({
                type: "thread.rewound",
                item_id: kept[at]!,
                restore: "both",
                paths: [],
                text: "",
              });
              kept.length = at;
            }
          }
          await transcript.flush();
          const listed = (await listSavedSessions({ dir })).find((session) => session.id === id);
          // A session rewound to nothing has no message left, and is not listed.
          expect(listed?.turns ?? 0).toBe(kept.length);
        },
      ),
      { numRuns: 40 },
    );
  });
});
