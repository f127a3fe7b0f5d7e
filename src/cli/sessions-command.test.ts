import { describe, expect, test } from "vitest";
import type { SessionSummary } from "../runtime/session-list.js";
import { relativeTime } from "./relative-time.js";
import { sessionsTable } from "./sessions-command.js";

const now = new Date("2026-03-10T12:00:00.000Z");
const ago = (ms: number) => new Date(now.getTime() - ms);

describe("spark sessions' text", () => {
  test("relativeTime: minutes, hours, days, then the date; a clock behind the file is 'just now'", () => {
    expect(relativeTime(ago(59_000), now)).toBe("just now");
    expect(relativeTime(ago(-5_000), now)).toBe("just now");
    expect(relativeTime(ago(5 * 60_000), now)).toBe("5 min ago");
    expect(relativeTime(ago(3 * 3_600_000), now)).toBe("3 h ago");
    expect(relativeTime(ago(30 * 3_600_000), now)).toBe("yesterday");
    expect(relativeTime(ago(4 * 86_400_000), now)).toBe("4 days ago");
    expect(relativeTime(ago(40 * 86_400_000), now)).toBe("2026-01-29");
  });

  test("sessionsTable: aligned columns, the title last and whole; --all adds the workspace; worktrees named", () => {
    const session = (over: Partial<SessionSummary>): SessionSummary => ({
      id: "thr_a",
      title: "t",
      cwd: "/w",
      model: "fast",
      createdAt: now.toISOString(),
      updatedAt: now.toISOString(),
      turns: 1,
      file: "/s/thr_a.jsonl",
      ...over,
    });
    const list = [
      session({ id: "thr_0123456789", title: "fix the parser", turns: 12 }),
      session({
        id: "thr_b",
        title: "in a tree",
        cwd: "/w/t",
        updatedAt: ago(7_200_000).toISOString(),
        worktree: "fix",
      }),
    ];
    expect(sessionsTable(list, { workspaces: false, now })).toBe(
      [
        "ID              WHEN      TURNS  TITLE",
        "thr_0123456789  just now  12     fix the parser",
        "thr_b           2 h ago   1      in a tree (worktree fix)",
        "",
      ].join("\n"),
    );
    expect(sessionsTable(list, { workspaces: true, now }).split("\n")[0]).toBe(
      "ID              WHEN      TURNS  WORKSPACE  TITLE",
    );
  });
});
