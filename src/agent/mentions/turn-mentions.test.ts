import { describe, expect, test } from "vitest";
import type { GenerateRequest } from "../../engine/engine.js";
import type { ScriptedReply } from "../../engine/scripted/scripted-engine.js";
import { agentHarness } from "../test-support/agent-harness.js";
import { recorded } from "../test-support/scripted-replies.js";
import { MAX_MENTION_BYTES } from "./file-mentions.js";

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

describe("@ mentions in a steer (scripted model, real server and client)", () => {
  const words = (n: number) => Array.from({ length: n }, (_, i) => `word${i}`).join(" ");

  test("a steer's @ mentions were not expanded: the model gets the file after the steer, bounded as a message's; the steer shows as typed, and a later steer keeps its place", async () => {
    const seen: GenerateRequest[] = [];
    const script = (request: GenerateRequest): ScriptedReply => {
      seen.push(request);
      return { text: seen.length === 1 ? words(400) : "Noted." };
    };
    const big = `${"x".repeat(99)}\n`.repeat(1000);
    await using h = await agentHarness(
      { "src/math.ts": "export const add = (a, b) => a + b;\n", "big.txt": big },
      { script, tokensPerSecond: 400 },
    );
    const firstDelta = h.next("item.delta");
    const turn = h.thread.startTurn("explain the project");
    await firstDelta;
    h.thread.submit("look at @src/math.ts and @big.txt and @../etc/passwd instead");
    h.thread.submit("and be brief");
    await turn;

    const users = seen.flatMap((request) => request.messages.filter((m) => m.role === "user"));
    const steer = users.find((m) => m.content.startsWith("look at @src/math.ts"))!;
    expect(steer.content).toContain(
      "look at @src/math.ts and @big.txt and @../etc/passwd instead\n\nFile src/math.ts (mentioned):\n```\nexport const add = (a, b) => a + b;\n```",
    );
    expect(steer.content).toContain(
      `File big.txt (mentioned; its first ${(MAX_MENTION_BYTES).toLocaleString("en-US")} of`,
    );
    expect(steer.content.length).toBeLessThan(MAX_MENTION_BYTES + 2000);
    expect(steer.content).not.toContain("root:");
    // The later steer (no mention) still comes after it.
    expect(users.map((m) => m.content.slice(0, 12)).slice(-2)).toEqual(["look at @src", "and be brief"]);
    const shown = h.thread.history.flatMap((i) => (i.type === "user_message" ? [i.text] : []));
    expect(shown).toEqual([
      "explain the project",
      "look at @src/math.ts and @big.txt and @../etc/passwd instead",
      "and be brief",
    ]);
    const notices = h.thread.history.flatMap((i) => (i.type === "notice" ? [i.text] : []));
    expect(notices).toEqual([
      "@../etc/passwd not attached: outside the workspace (only files inside it are attached).",
    ]);
    expect(h.events.at(-1)).toMatchObject({ type: "turn.completed", status: "completed" });
  });
});
