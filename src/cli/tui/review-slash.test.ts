import "./test-support/force-color.js";
import { describe, expect, test } from "vitest";
import { ResponsesClient } from "../../client/responses-client.js";
import { slashReview } from "../../client-core/review-text.js";
import type { GenerateRequest } from "../../engine/engine.js";
import { reviewSession } from "../../runtime/review/session-review.js";
import { git, plantBug } from "../../runtime/review/test-support/planted-bug.js";
import { tuiHarness } from "./test-support/tui-harness.js";

const finding = {
  file: "sum.ts",
  start_line: 3,
  end_line: 3,
  severity: "error",
  title: "Off-by-one in the loop bound",
  explanation: "i <= xs.length reads past the end.",
};

/** The review's request (under the findings schema) gets the finding; the session's turns an echo. */
function script(request: GenerateRequest) {
  if (request.format) return { text: JSON.stringify({ findings: [finding] }) };
  return { text: `You said: ${request.messages.at(-1)?.content}` };
}

describe("/review in the terminal", () => {
  test("reviews the workspace's uncommitted change on the session's model and shows the finding by file and line", async () => {
    await using h = await tuiHarness({}, { script });
    await plantBug(h.dir, "sum.ts");
    const client = await ResponsesClient.connect({ baseUrl: `${h.server.url}/v1` });
    try {
      const args: string[] = [];
      h.mount({
        // The host's thread.review, on the harness's thread and model (the faces go through slashReview).
        onReview: (threadId, given, onProgress) => {
          args.push(given);
          const model = { client, model: h.engine.info.id, contextBudget: 32_768 };
          const host = {
            review: (_: string, target: Parameters<typeof reviewSession>[1], hear: (step: string) => void) =>
              reviewSession(h.dir, target, model, { onProgress: hear, signal: new AbortController().signal }),
          };
          return slashReview(host, threadId, given, onProgress);
        },
      });
      await h.send("/help");
      await h.stdout.waitForText("/review [--base B | --commit C]");
      await h.send("/review");
      const frame = await h.stdout.waitForText("1 finding (1 error) in uncommitted changes.");
      expect(frame).toContain("sum.ts:3 error: Off-by-one in the loop bound");
      expect(frame).toContain("Reviewing (read-only");
      expect(frame).toContain("Reviewing 1 file (uncommitted changes) on");
      // The session's own thread took no turn: the review ran in a thread of its own.
      expect(h.thread.history).toHaveLength(0);
      await h.send("/review --base nope");
      await h.stdout.waitForText("Review failed: --base 'nope' is not a branch, tag or commit");
      await h.send("/review --frobnicate");
      await h.stdout.waitForText(
        "Review failed: Usage: /review [--uncommitted | --base BRANCH | --commit SHA]",
      );
      expect(args).toEqual(["", "--base nope", "--frobnicate"]);
    } finally {
      await client.close();
    }
  });

  test("nothing changed: says so; a face offering no review says to run spark review", async () => {
    await using h = await tuiHarness({ "a.txt": "a\n" }, {});
    git(h.dir, "init", "-q");
    git(h.dir, "add", ".");
    git(h.dir, "commit", "-q", "-m", "a");
    const model = { client: null as never, model: "scripted", contextBudget: 32_768 };
    const signal = new AbortController().signal;
    const host = {
      review: (_: string, target: Parameters<typeof reviewSession>[1]) =>
        reviewSession(h.dir, target, model, { onProgress: () => {}, signal }),
    };
    expect(await slashReview(host, h.thread.info.id, "")).toBe(
      "Nothing to review: no changed lines in uncommitted changes.",
    );
    h.mount();
    await h.send("/review");
    await h.stdout.waitForText("/review is not available here; run spark review in the workspace.");
  });
});
