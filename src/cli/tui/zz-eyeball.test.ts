import "./test-support/force-color.js";
import { test } from "vitest";
import type { GenerateRequest } from "../../engine/engine.js";
import { KEYS } from "./test-support/fake-terminal.js";
import { tuiHarness } from "./test-support/tui-harness.js";

const MATH = "export function add(a: number, b: number) {\n  return a - b;\n}\n";
const PATCH = [
  "*** Begin Patch",
  "*** Update File: src/math.ts",
  "@@",
  " export function add(a: number, b: number) {",
  "-  return a - b;",
  "+  return a + b;",
  " }",
  "*** End Patch",
].join("\n");
const LONG = Array.from({ length: 200 }, (_, i) => `word${i}`).join(" ");

test("eyeball", async () => {
  let turn = 0;
  const script = (request: GenerateRequest) => {
    const last = [...request.messages].reverse().find((m) => m.role === "user")?.content ?? "";
    turn++;
    if (last === "fix")
      return turn === 1
        ? {
            text: "Let me read it.\n",
            toolCalls: [{ name: "read_file", arguments: '{"path":"src/math.ts"}' }],
          }
        : turn === 2
          ? { toolCalls: [{ name: "apply_patch", arguments: JSON.stringify({ patch: PATCH }) }] }
          : turn === 3
            ? { toolCalls: [{ name: "shell", arguments: JSON.stringify({ command: "seq 1 20" }) }] }
            : { text: "Done. **Fixed** it.\n\nParagraph two." };
    return { text: LONG };
  };
  await using h = await tuiHarness(
    { "src/math.ts": MATH },
    { script, tokensPerSecond: 100 },
    { allowShell: true },
  );
  h.mount();
  await h.send("fix");
  await h.stdout.waitForText("[y] approve");
  console.log(h.stdout.screen());
  await h.stdin.press("y");
  await h.stdout.waitFor((f) => f.includes("Paragraph two") && f.includes("idle"));
  await h.send("long");
  await h.stdout.waitForText("word10 ");
  await h.send("queued one", KEYS.tab);
  await h.stdout.waitForText("queued: queued one");
  console.log(h.stdout.screen());
  await h.stdin.press(KEYS.escape);
  await h.stdout.waitFor((f) => f.includes("idle"));
  console.log(h.stdout.lastFrame());
});
