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

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

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

test("deltas of one event-loop turn go out as one frame as soon as the turn ends", async () => {
  const h = harness();
  h.coalescer.push(delta("a"));
  h.coalescer.push(delta("b"));
  expect(h.sent).toEqual([]);
  await nextTurn();
  expect(h.sent).toEqual([delta("ab")]);
  h.coalescer.push(delta("c"));
  await nextTurn();
  expect(h.sent).toEqual([delta("ab"), delta("c")]);
});

test("a busy transport keeps merging until it drains", async () => {
  const h = harness();
  h.setBusy(true);
  h.coalescer.push(delta("a"));
  await nextTurn();
  h.coalescer.push(delta("b"));
  h.coalescer.push(delta("c"));
  await nextTurn();
  expect(h.sent).toEqual([]);
  h.drain();
  expect(h.sent).toEqual([delta("abc")]);
});

test("other events flush the merged delta first, keeping order", async () => {
  const h = harness();
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
  await nextTurn();
  expect(h.sent).toHaveLength(2);
});

test("deltas of different items are never merged", async () => {
  const h = harness();
  h.coalescer.push(delta("a", "msg_1"));
  h.coalescer.push(delta("b", "msg_2"));
  await nextTurn();
  expect(h.sent).toEqual([delta("a", "msg_1"), delta("b", "msg_2")]);
});

const argumentsDelta = (text: string, item = "fc_1"): ResponseStreamEvent => ({
  type: "response.function_call_arguments.delta",
  item_id: item,
  output_index: 1,
  delta: text,
});

test("function call argument deltas of one turn merge per call, apart from text and other calls", async () => {
  const h = harness();
  h.coalescer.push(argumentsDelta('{"pa'));
  h.coalescer.push(argumentsDelta('tch":'));
  h.coalescer.push(argumentsDelta("{", "fc_2"));
  h.coalescer.push(delta("x"));
  await nextTurn();
  expect(h.sent).toEqual([argumentsDelta('{"patch":'), argumentsDelta("{", "fc_2"), delta("x")]);
});
