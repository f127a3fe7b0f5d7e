import { expect, test } from "vitest";
import { FairQueue } from "./fair-queue.js";

function drain<T>(queue: FairQueue<T>): T[] {
  const order: T[] = [];
  for (let item = queue.shift(); item !== undefined; item = queue.shift()) order.push(item);
  return order;
}

test("serves keys round-robin, each key in its own arrival order", () => {
  const queue = new FairQueue<string>();
  for (const item of ["a1", "a2", "a3", "a4"]) queue.push("a", item);
  queue.push("b", "b1");
  queue.push("c", "c1");
  queue.push("c", "c2");
  expect(drain(queue)).toEqual(["a1", "b1", "c1", "a2", "c2", "a3", "a4"]);
  expect(queue.size).toBe(0);
});

test("positions predict the order shift serves", () => {
  const queue = new FairQueue<string>();
  for (const item of ["a1", "a2", "a3"]) queue.push("a", item);
  queue.push("b", "b1");
  queue.push("b", "b2");
  queue.push("c", "c1");
  const positions = queue.positions();
  const order = drain(queue);
  expect(order.map((item) => positions.get(item))).toEqual([1, 2, 3, 4, 5, 6]);
});

test("a key that arrives later is served before a busy key's later requests", () => {
  const queue = new FairQueue<string>();
  for (const item of ["a1", "a2", "a3"]) queue.push("a", item);
  expect(queue.shift()).toBe("a1");
  queue.push("b", "b1");
  expect(queue.positions().get("b1")).toBe(2);
  expect(drain(queue)).toEqual(["a2", "b1", "a3"]);
});

test("remove takes an item out wherever it waits", () => {
  const queue = new FairQueue<string>();
  queue.push("a", "a1");
  queue.push("a", "a2");
  queue.push("b", "b1");
  expect(queue.remove("a", "a1")).toBe(true);
  expect(queue.remove("a", "a1")).toBe(false);
  expect(queue.remove("b", "b1")).toBe(true);
  expect(queue.size).toBe(1);
  expect(drain(queue)).toEqual(["a2"]);
});
