import { describe, expect, test } from "vitest";
import { agentHarness } from "../test-support/agent-harness.js";
import { recorded } from "../test-support/scripted-replies.js";

describe("@ mentions in a turn (scripted model, real server and client)", () => {
  test("the model gets the mentioned file after the message; the faces see the message as typed and a notice for a refused mention", async () => {
    const model = recorded([{ text: "It adds." }]);
    await using h = await agentHarness(
      { "src/math.ts": "export const add = (a, b) => a + b;\n" },
      { script: model.script },
    );
    await h.thread.startTurn("what does @src/math.ts do? and @../etc/passwd");

    const user = model.requests[0]!.messages.filter((m) => m.role === "user").at(-1)!;
    expect(user.content).toContain(
      "what does @src/math.ts do? and @../etc/passwd\n\nFile src/math.ts (mentioned):\n```\nexport const add = (a, b) => a + b;\n```",
    );
    expect(user.content).not.toContain("root:");
    expect(h.thread.history.find((i) => i.type === "user_message")).toMatchObject({
      text: "what does @src/math.ts do? and @../etc/passwd",
    });
    const notices = h.thread.history.flatMap((i) => (i.type === "notice" ? [i.text] : []));
    expect(notices).toEqual([
      "@../etc/passwd not attached: outside the workspace (only files inside it are attached).",
    ]);
    expect(h.events.at(-1)).toMatchObject({ type: "turn.completed", status: "completed" });
  });
});
