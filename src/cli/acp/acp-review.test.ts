import { mkdtemp, realpath } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { plantBug } from "../../runtime/review/test-support/planted-bug.js";
import { AcpTestClient } from "./test-support/acp-test-client.js";
import { scriptedAcpEnv } from "./test-support/acp-test-env.js";

const finding = {
  file: "sum.ts",
  start_line: 3,
  end_line: 3,
  severity: "error",
  title: "Off-by-one in the loop bound",
  explanation: "i <= xs.length reads past the end.",
};

let repo: string;
let acp: AcpTestClient;

beforeAll(async () => {
  repo = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-acp-review-")));
  await plantBug(repo, "sum.ts");
  const scratch = await mkdtemp(path.join(os.tmpdir(), "spark-acp-review-state-"));
  // The review's message names what it reviews; the session's own turns get plain text.
  const env = await scriptedAcpEnv(scratch, [
    { match: "Review uncommitted changes", text: JSON.stringify({ findings: [finding] }) },
    { text: "Answered by the model." },
  ]);
  acp = AcpTestClient.start(repo, env);
  await acp.initialize();
});

afterAll(async () => {
  await acp?.close();
});

async function say(sessionId: string, text: string): Promise<string> {
  const before = acp.text(sessionId).length;
  const { stopReason } = await acp.agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text }],
  });
  expect(stopReason).toBe("end_turn");
  return acp.text(sessionId).slice(before);
}

test("/review in ACP: advertised, run by the agent host read-only, shown as a read tool call, the findings as the agent's message", async () => {
  const sessionId = await acp.newSession(repo);
  await acp.until(() => acp.of(sessionId, "available_commands_update").length > 0);
  const [advertised] = acp.of(sessionId, "available_commands_update");
  expect(advertised!.availableCommands).toContainEqual(
    expect.objectContaining({ name: "review", input: { hint: "--base BRANCH | --commit SHA" } }),
  );

  const answer = await say(sessionId, "/review");
  expect(answer).toContain("sum.ts:3 error: Off-by-one in the loop bound");
  expect(answer).toContain("1 finding (1 error) in uncommitted changes.");
  const [call] = acp.of(sessionId, "tool_call");
  expect(call).toMatchObject({ title: "Review (read-only)", kind: "read", status: "in_progress" });
  const updates = acp.of(sessionId, "tool_call_update").filter((u) => u.toolCallId === call!.toolCallId);
  expect(updates.map((u) => u.title)).toContain(
    "Review (read-only): Reviewing 1 file (uncommitted changes) on fast",
  );
  expect(updates.at(-1)).toMatchObject({ status: "completed" });
  // The session's conversation took no turn: the model was asked only by the review's own thread.
  expect(await say(sessionId, "hello")).toBe("Answered by the model.");

  // Arguments git could read as options never reach the host; a base git does not know is said.
  expect(await say(sessionId, "/review --base --upload-pack=x")).toContain(
    "'--upload-pack=x' is not a branch, tag or commit",
  );
  expect(await say(sessionId, "/review --base nope")).toContain(
    "--base 'nope' is not a branch, tag or commit",
  );
  expect(acp.of(sessionId, "tool_call_update").at(-1)).toMatchObject({ status: "failed" });
});
