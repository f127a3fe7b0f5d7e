import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { describe, expect, test } from "vitest";
import type { EditDiagnostics } from "./diagnostics/edit-diagnostics.js";
import { agentHarness } from "./test-support/agent-harness.js";
import { call, recorded } from "./test-support/scripted-replies.js";
import { applyPatchTool } from "./tools/apply-patch.js";
import { tempWorkspace } from "./tools/test-support/temp-workspace.js";
import { runTool, type Tool, type ToolResult } from "./tools/tool.js";
import { Workspace } from "./workspace.js";

// Regression tests for the rewind-files defect the host explorer found (src/host/host-explore.model.test.ts):
// an apply_patch interrupted while it wrote was answered "aborted" at once while its write went on
// unseen, so a file was on disk that no face was shown and no code rewind named.

const ADD = JSON.stringify({ patch: "*** Begin Patch\n*** Add File: new.txt\n+new\n*** End Patch" });

const exists = (file: string) =>
  stat(file).then(
    () => true,
    () => false,
  );

/** A workspace that calls `onResolve` with each path it resolves and the count of calls so far. */
class WatchedWorkspace extends Workspace {
  private calls = 0;

  constructor(
    root: string,
    private readonly onResolve: (path: string, calls: number) => Promise<void> | void,
  ) {
    super(root);
  }

  override async resolve(file: string): Promise<string> {
    await this.onResolve(file, ++this.calls);
    return super.resolve(file);
  }
}

describe("rewind-files", () => {
  test("an interrupt once the patch is writing lets it finish: its item shows the diff and a code rewind removes the file", async () => {
    const { script } = recorded([call("apply_patch", JSON.parse(ADD))]);
    await using h = await agentHarness({ "a.txt": "a" }, { script });
    // The interrupt lands while applyChanges is still running: its files are on disk, its journal
    // entry not yet recorded, its result not yet returned.
    const record = h.thread.journal.record.bind(h.thread.journal);
    h.thread.journal.record = (entry) => {
      h.thread.interrupt();
      record(entry);
    };
    await h.thread.startTurn("add new.txt");

    expect(h.events.find((e) => e.type === "turn.completed")).toMatchObject({ status: "interrupted" });
    const patched = h.thread.history.find((item) => item.type === "tool_call");
    expect(patched).toMatchObject({
      name: "apply_patch",
      status: "completed",
      output: "Added new.txt (+1 -0)",
      display: { kind: "diff", files: [{ kind: "add", path: "new.txt" }] },
    });
    expect(await exists(path.join(h.dir, "new.txt"))).toBe(true);

    const user = h.thread.history.find((item) => item.type === "user_message")!;
    expect(await h.thread.rewind(user.id, "code")).toMatchObject({ paths: ["new.txt"] });
    expect(await exists(path.join(h.dir, "new.txt"))).toBe(false);
  });

  test("an interrupt while the patch is still being checked ends the turn at once", async () => {
    const { script } = recorded([call("apply_patch", JSON.parse(ADD))]);
    // Never settles: the patch stays held in its checks.
    const held = new Promise<void>(() => {});
    let thread: { interrupt(): void } | undefined;
    const dir = await tempWorkspace();
    await using _dir = dir;
    // The planner resolves new.txt first; the writer resolves it again before checking the disk.
    const workspace = new WatchedWorkspace(dir.dir, (_file, calls) => {
      if (calls !== 2) return;
      thread?.interrupt();
      return held;
    });
    await using h = await agentHarness({}, { script }, { workspace });
    thread = h.thread;
    await h.thread.startTurn("add new.txt");

    expect(h.events.find((e) => e.type === "turn.completed")).toMatchObject({ status: "interrupted" });
    expect(h.thread.history.find((item) => item.type === "tool_call")).toMatchObject({
      status: "failed",
      output: "aborted",
    });
    expect(await exists(path.join(dir.dir, "new.txt"))).toBe(false);
  });

  test("a patch interrupted between its checks and its first write writes nothing and records no edit", async () => {
    await using t = await tempWorkspace();
    const interrupt = new AbortController();
    const workspace = new WatchedWorkspace(t.dir, (_file, calls) => {
      if (calls === 2) interrupt.abort();
    });
    let background: Promise<ToolResult> | undefined;
    const watched: Tool = {
      ...applyPatchTool,
      run: (args, ctx) => {
        background = applyPatchTool.run(args as { patch: string }, ctx);
        return background;
      },
    };

    const result = await runTool(watched, ADD, t.context({ workspace, signal: interrupt.signal }));
    expect(result).toMatchObject({ output: "aborted", errorCode: "aborted" });
    // The patch went on checking after the answer; it stops at its first write.
    await expect(background).rejects.toMatchObject({ name: "AbortError" });
    expect(await readdir(t.dir)).toEqual([]);
    expect(t.journal.newest).toBeUndefined();
  });

  test("a patch interrupted while its diagnostics run is reported applied, without waiting for them", async () => {
    await using t = await tempWorkspace();
    const interrupt = new AbortController();
    const diagnostics = {
      check: () => {
        interrupt.abort();
        return new Promise(() => {});
      },
    } as unknown as EditDiagnostics;

    const result = await runTool(applyPatchTool, ADD, t.context({ diagnostics, signal: interrupt.signal }));
    expect(result).toEqual({
      output: "Added new.txt (+1 -0)",
      isError: false,
      display: { kind: "diff", files: [expect.objectContaining({ kind: "add", path: "new.txt" })] },
    });
    expect((await t.read("new.txt")).toString()).toBe("new\n");
    expect(t.journal.newest?.files.map((file) => file.path)).toEqual([path.join(t.dir, "new.txt")]);
  });
});
