import { expect, test } from "vitest";
import type { ResponseStreamEvent } from "../../protocol/responses.js";
import { DeltaCoalescer } from "./delta-coalescer.js";

const delta = (text: string, item = "msg_1"): ResponseStreamEvent => ({
  type: "response.output_text.delta",
  item_id: item,
  output_index: 0,
  content_index: 0,
  delta: text,
  logprobs: [],
});

function harness() {
  const sent: ResponseStreamEvent[] = [];
  let busy = false;
  let drained: (() => void) | null = null;
  const coalescer = new DeltaCoalescer({
    send: (event) => sent.push(event),
    isBusy: () => busy,
    whenDrained: (callback) => {
      drained = callback;
    },
  });
  return {
    sent,
    coalescer,
    setBusy: (value: boolean) => {
      busy = value;
    },
    drain: () => {
      busy = false;
      drained?.();
    },
  };
}

test("an idle transport gets every delta at once", () => {
  const h = harness();
  h.coalescer.push(delta("a"));
  h.coalescer.push(delta("b"));
  expect(h.sent.map((e) => (e.type === "response.output_text.delta" ? e.delta : e.type))).toEqual(["a", "b"]);
});

test("a busy transport gets the deltas merged, sent when it drains", () => {
  const h = harness();
  h.setBusy(true);
  h.coalescer.push(delta("a"));
  h.coalescer.push(delta("b"));
  h.coalescer.push(delta("c"));
  expect(h.sent).toEqual([]);
  h.drain();
  expect(h.sent).toEqual([delta("abc")]);
});

test("other events flush the merged delta first, keeping order", () => {
  const h = harness();
  h.setBusy(true);
  h.coalescer.push(delta("a"));
  h.coalescer.push(delta("b"));
  const done: ResponseStreamEvent = {
    type: "response.output_text.done",
    item_id: "msg_1",
    output_index: 0,
    content_index: 0,
    text: "ab",
    logprobs: [],
  };
  h.coalescer.push(done);
  expect(h.sent).toEqual([delta("ab"), done]);
  h.drain();
  expect(h.sent).toHaveLength(2);
});

test("deltas of different items are never merged", () => {
  const h = harness();
  h.setBusy(true);
  h.coalescer.push(delta("a", "msg_1"));
  h.coalescer.push(delta("b", "msg_2"));
  h.drain();
  expect(h.sent).toEqual([delta("a", "msg_1"), delta("b", "msg_2")]);
});
