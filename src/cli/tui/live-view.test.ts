import "./test-support/force-color.js";
import { render } from "ink";
import React from "react";
import { describe, expect, test } from "vitest";
import type { ThreadEvent, ThreadItem } from "../../protocol/agent.js";
import { ConversationStore } from "./conversation-store.js";
import { LiveView } from "./live-view.js";
import { FakeStdout, stripAnsi, waitForOutput } from "./test-support/fake-terminal.js";

const T = "turn_1";
const call: ThreadItem = {
  type: "tool_call",
  id: "c1",
  name: "apply_patch",
  arguments: "",
  status: "running",
};
const delta = (text: string): ThreadEvent => ({ type: "item.delta", turn_id: T, item_id: "c1", delta: text });
/** The JSON text of `{"patch": ...}` without its end, as the model writes it. */
const opening = (patch: string) => JSON.stringify({ patch }).slice(0, -2);

function Live({ store }: { store: ConversationStore }): React.ReactElement {
  return React.createElement(LiveView, {
    view: React.useSyncExternalStore(store.subscribe, store.getSnapshot),
  });
}

/** The live part of the terminal UI over a store fed the agent's events, on a fake terminal. */
function mountLive(rows = 40) {
  const store = new ConversationStore({ frameMs: 0 });
  const stdout = new FakeStdout();
  stdout.rows = rows;
  const instance = render(React.createElement(Live, { store }), {
    stdout: stdout as unknown as NodeJS.WriteStream,
    debug: true,
    patchConsole: false,
  });
  store.apply({ type: "turn.started", turn_id: T, input: "fix add" });
  store.apply({ type: "item.started", turn_id: T, item: call });
  return {
    store,
    stdout,
    [Symbol.dispose]: () => {
      instance.unmount();
      store.dispose();
    },
  };
}

describe("a patch being written, in the terminal's live view", () => {
  test("grows line by line as a coloured diff under the running call", async () => {
    using live = mountLive();
    const { store, stdout } = live;
    const patch =
      "*** Begin Patch\n*** Update File: src/math.ts\n@@ function add\n-  return a - b;\n+  return a + b;\n";
    store.apply(delta(opening(patch.slice(0, 60))));
    let frame = await stdout.waitFor((f) => f.includes("src/math.ts") && f.includes("writing..."));
    expect(frame).toContain("• apply_patch src/math.ts");
    expect(frame).not.toContain("return");
    // The rest, with the last line cut half-way: it waits for its newline.
    store.apply(delta(JSON.stringify(patch.slice(60)).slice(1, -1)));
    store.apply(delta("}  // half a li"));
    frame = await stdout.waitFor((f) => f.includes("+  return a + b;"), { raw: true });
    expect(frame).toContain("\x1b[31m-  return a - b;");
    expect(frame).toContain("\x1b[32m+  return a + b;");
    expect(frame).toContain("@@ function add");
    expect(stdout.screen()).toContain("src/math.ts +1 -1");
    expect(stdout.screen()).not.toContain("half a li");
    expect(store.getSnapshot().phase).toBe("writing patch");
    // The whole call is written: the tool runs.
    store.apply(delta('ne"}'));
    store.flush();
    expect(store.getSnapshot().phase).toBe("running tool");
    await stdout.waitForText("running...");
  });

  test("a long patch shows its end only, each line cut to the screen's width", async () => {
    using live = mountLive(30);
    const { store, stdout } = live;
    const lines = Array.from({ length: 200 }, (_, i) => `+line ${i} ${"x".repeat(300)}`);
    store.apply(delta(opening(`*** Begin Patch\n*** Add File: big.txt\n${lines.join("\n")}\n`)));
    const frame = await stdout.waitFor((f) => f.includes("+line 199"));
    expect(frame).not.toContain("+line 150 ");
    expect(frame).toMatch(/\.\.\. \d+ lines above/);
    // Shorter than the screen: the terminal can still redraw it in place.
    expect(frame.split("\n").length).toBeLessThan(30);
  });

  test("a finished call leaves the live view with its preview (printed once above it, as finished)", async () => {
    using live = mountLive();
    const { store, stdout } = live;
    store.apply(delta(opening("*** Begin Patch\n*** Add File: n.ts\n+one\n")));
    await stdout.waitForText("+one");
    store.apply({
      type: "item.completed",
      turn_id: T,
      item: { ...call, status: "failed", output: "Not applied: the turn was interrupted." },
    });
    // A finished call leaves the live view (it is printed once, above it): the live part is empty.
    const latest = () => stripAnsi(stdout.writes.at(-1) ?? "");
    expect((await waitForOutput(stdout, latest, (f) => !f.includes("apply_patch"))).trim()).toBe("");
    expect(store.getSnapshot().entries.at(-1)).toMatchObject({ kind: "tool", item: { status: "failed" } });
  });
});
