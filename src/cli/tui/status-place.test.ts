import { render } from "ink";
import React from "react";
import { describe, expect, test } from "vitest";
import { emptyView } from "../../client-core/thread-view.js";
import type { ConversationView } from "./conversation-store.js";
import { placeLabel, StatusBar } from "./status-bar.js";
import { FakeStdin, FakeStdout } from "./test-support/fake-terminal.js";

const idle: ConversationView = {
  entries: [],
  streaming: null,
  running: [],
  approvals: [],
  queued: [],
  phase: "idle",
  subAgents: [],
  thread: emptyView(),
};

/** The status line as drawn `columns` wide. */
async function statusLine(columns: number, place: string): Promise<string> {
  const stdout = new FakeStdout();
  stdout.columns = columns;
  const instance = render(
    React.createElement(StatusBar, {
      modelId: "fast",
      view: idle,
      now: 0,
      activity: null,
      quitArmed: false,
      place,
    }),
    {
      stdout: stdout as unknown as NodeJS.WriteStream,
      stdin: new FakeStdin() as unknown as NodeJS.ReadStream,
      patchConsole: false,
      debug: true,
    },
  );
  try {
    return (await stdout.waitFor((frame) => frame.includes("idle"))).split("\n")[0]!;
  } finally {
    instance.unmount();
  }
}

describe("the status line names the workspace and the session", () => {
  test("placeLabel: the folder's name and the session id as spark resume takes it", () => {
    const info = { id: "thr_3f2a9c1d5e6f7a8b9c0d", cwd: "/home/me/src/parser" };
    expect(placeLabel(info)).toBe("parser · thr_3f2a9c1d");
    // Before the thread exists: the workspace alone; nothing known: nothing shown.
    expect(placeLabel(null, "/home/me/src/parser")).toBe("parser");
    expect(placeLabel(null)).toBe("");
  });

  test("shown first on a wide line; on a narrow one it gives way to the model, the state and the keys", async () => {
    const place = "parser · thr_3f2a9c1d";
    expect(await statusLine(100, place)).toMatch(
      /^ parser · thr_3f2a9c1d · fast · idle\s+Enter send · Tab queue · \/help/,
    );
    const narrow = await statusLine(60, place);
    expect(narrow).not.toContain("parser");
    expect(narrow).toMatch(/^ fast · idle\s+Enter send · Tab queue · \/help/);
  });
});
