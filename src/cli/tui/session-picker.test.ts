import { describe, expect, test } from "vitest";
import type { SessionSummary } from "../../runtime/session-list.js";
import { pickSession } from "./session-picker.js";
import { FakeStdin, FakeStdout, KEYS } from "./test-support/fake-terminal.js";

const now = Date.now();
/** `count` sessions, newest first, one minute apart. */
function sessions(count: number): SessionSummary[] {
  return Array.from({ length: count }, (_, index) => ({
    id: `thr_${String(index).padStart(20, "0")}`,
    title: `task ${index}`,
    cwd: "/w",
    model: "fast",
    createdAt: new Date(now).toISOString(),
    updatedAt: new Date(now - index * 60_000).toISOString(),
    turns: index + 1,
    file: `/s/${index}.jsonl`,
  }));
}

function terminal() {
  const stdout = new FakeStdout();
  const stdin = new FakeStdin();
  const io = {
    stdout: stdout as unknown as NodeJS.WriteStream,
    stdin: stdin as unknown as NodeJS.ReadStream,
    ink: { debug: true },
  };
  return { stdout, stdin, io };
}

describe("spark resume's session picker", () => {
  test("lists newest first with when and turns; the list scrolls with the selection; Enter picks", async () => {
    const { stdout, stdin, io } = terminal();
    const list = sessions(12);
    const chosen = pickSession(list, io);
    const first = await stdout.waitForText("Resume which session?");
    // Aligned columns: title, when, turns, the id's start.
    expect(first).toMatch(/^> task 0 +just now {4}1 turn {4}thr_00000000$/m);
    expect(first).toMatch(/^ {2}task 1 +1 min ago {3}2 turns {3}thr_00000000$/m);
    // Ten rows at a time.
    expect(first).not.toContain("task 10");
    expect(first).toContain("1 of 12");
    for (let i = 0; i < 11; i++) await stdin.press(KEYS.down);
    const bottom = await stdout.waitForText("> task 11");
    expect(bottom).not.toContain("task 0 ");
    expect(bottom).toContain("12 of 12");
    await stdin.press(KEYS.down);
    await stdout.waitForText("> task 0 ");
    await stdin.press(KEYS.up);
    await stdin.press(KEYS.enter);
    expect(await chosen).toBe(list[11]);
  });

  test("Esc, and Ctrl+C, cancel: nothing is picked", async () => {
    for (const key of [KEYS.escape, KEYS.ctrlC]) {
      const { stdout, stdin, io } = terminal();
      const chosen = pickSession(sessions(2), io);
      await stdout.waitForText("Resume which session?");
      await stdin.press(key);
      expect(await chosen).toBeNull();
    }
  });
});
