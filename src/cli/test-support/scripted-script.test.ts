import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, test } from "vitest";
import type { ChatMessage } from "../../protocol/chat.js";
import { loadScriptFile, parseScript } from "./scripted-script.js";

const ask = (...messages: ChatMessage[]) => ({ messages });
const user = (content: string): ChatMessage => ({ role: "user", content });
const tool: ChatMessage = { role: "tool", callId: "c", name: "apply_patch", content: "ok" };

describe("scripted engine scripts (SPARK_TEST_ENGINE's script)", () => {
  test("plain entries are served in order, cycling; match entries answer the user messages that contain them", () => {
    const script = parseScript(
      JSON.stringify([
        { match: "rename", toolCalls: [{ name: "apply_patch", arguments: '{"patch":"..."}' }] },
        { text: "first" },
        { text: "second" },
      ]),
    );
    expect(script(ask(user("hello")), 0)).toEqual({ text: "first" });
    expect(script(ask(user("please rename greet")), 1)).toEqual({
      toolCalls: [{ name: "apply_patch", arguments: '{"patch":"..."}' }],
    });
    expect(script(ask(user("please rename greet"), tool), 2)).toEqual({ text: "second" });
    expect(script(ask(user("again")), 3)).toEqual({ text: "first" });
  });

  test("with only match entries, other messages are echoed and tool results answered", () => {
    const script = parseScript(JSON.stringify([{ match: "hi", text: "hello!" }]));
    expect(script(ask(user("hi there")), 0)).toEqual({ text: "hello!" });
    expect(script(ask(user("what")), 1)).toEqual({ text: "You said: what" });
    expect(script(ask(user("hi"), tool), 2)).toEqual({ text: "Done." });
  });

  test("an entry's reasoning is served before its text (the model thinks, then answers)", () => {
    const script = parseScript(JSON.stringify([{ match: "why", reasoning: "Because.", text: "So." }]));
    expect(script(ask(user("why?")), 0)).toEqual({ reasoning: "Because.", text: "So." });
    expect(() => parseScript('[{"reasoning": 5, "text": "a"}]')).toThrow(/\[0\]\[reasoning\]/);
  });

  test("bad scripts are refused naming the entry", async () => {
    expect(() => parseScript("{")).toThrow(/not JSON/);
    expect(() => parseScript("[]")).toThrow(/not a script/);
    expect(() => parseScript('[{"text": "a"}, {"match": "x"}]')).toThrow(
      /\[1\].*needs text, toolCalls or both/,
    );
    expect(() => parseScript('[{"txt": "a"}]')).toThrow(/not a script at \[0\]/);
    expect(() => loadScriptFile("/nowhere/script.json")).toThrow(/Cannot read the script/);
    const dir = await mkdtemp(path.join(os.tmpdir(), "spark-script-"));
    const file = path.join(dir, "script.json");
    await writeFile(file, JSON.stringify([{ text: "from a file" }]));
    expect(loadScriptFile(file)(ask(user("x")), 0)).toEqual({ text: "from a file" });
  });
});
