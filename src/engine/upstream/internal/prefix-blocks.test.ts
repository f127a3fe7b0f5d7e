import { describe, expect, test } from "vitest";
import { PrefixMemory, prefixBlocks } from "./prefix-blocks.js";

const system = { role: "system", content: "You are a careful coding assistant. ".repeat(40) };
const user = (content: string) => ({ role: "user", content });

describe("prefix blocks", () => {
  test("prompts sharing a prefix share exactly the hashes of the blocks they share", () => {
    const a = prefixBlocks({ messages: [system, user("first question about the parser ".repeat(8))] }, 64);
    const b = prefixBlocks({ messages: [system, user("another one, on the tokenizer ".repeat(8))] }, 64);
    const shared = Math.floor(JSON.stringify([]).concat(JSON.stringify(system)).length / 64);
    expect(a.length).toBeGreaterThan(shared);
    expect(a.slice(0, shared)).toEqual(b.slice(0, shared));
    expect(a[shared + 1]).not.toBe(b[shared + 1]);
  });

  test("a hash covers every block before it: the same block after a different prefix hashes differently", () => {
    const block = "x".repeat(64);
    const one = prefixBlocks({ messages: [user(`${"a".repeat(64)}${block}`)] }, 64);
    const two = prefixBlocks({ messages: [user(`${"b".repeat(64)}${block}`)] }, 64);
    expect(one).toHaveLength(two.length);
    expect(new Set([...one, ...two]).size).toBe(one.length + two.length);
  });

  test("tools are part of the prefix; a trailing partial block is left out", () => {
    const tool = [{ type: "function", function: { name: "read", parameters: { type: "object" } } }];
    const bare = prefixBlocks({ messages: [system] }, 64);
    const withTools = prefixBlocks({ tools: tool, messages: [system] }, 64);
    expect(withTools[0]).not.toBe(bare[0]);
    expect(prefixBlocks({ messages: [user("short")] }, 256)).toEqual([]);
    const text = `[]${JSON.stringify(system)}`;
    expect(bare).toHaveLength(Math.floor(text.length / 64));
  });
});

describe("prefix memory", () => {
  test("counts the known blocks from the front and stops at the first unknown one", () => {
    const memory = new PrefixMemory(100);
    memory.remember(["a", "b", "c"]);
    expect(memory.matched(["a", "b", "c", "d"])).toBe(3);
    expect(memory.matched(["a", "x", "c"])).toBe(1);
    expect(memory.matched(["x", "a"])).toBe(0);
    expect(memory.matched([])).toBe(0);
  });

  test("is bounded: past its capacity the least recently used blocks go first", () => {
    const memory = new PrefixMemory(4);
    memory.remember(["a", "b", "c"]);
    memory.remember(["a"]); // a is now the most recent
    memory.remember(["d", "e"]);
    expect(memory.size).toBe(4);
    expect(memory.matched(["b"])).toBe(0);
    expect(memory.matched(["a"])).toBe(1);
    expect(memory.matched(["c"])).toBe(1);
    memory.remember(Array.from({ length: 1000 }, (_, i) => `k${i}`));
    expect(memory.size).toBe(4);
    expect(memory.matched(["k996", "k997", "k998", "k999"])).toBe(4);
  });
});
