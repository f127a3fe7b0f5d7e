import { describe, expect, test } from "vitest";
import { ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import type { FunctionCallOutputItem } from "../protocol/responses.js";
import { startTestServer } from "../server/test-support/test-server.js";
import type { ServerEvent } from "./response-stream.js";
import { ResponsesClient } from "./responses-client.js";
import { collect, readUntil } from "./test-support/client-test-kit.js";

const patch = Array.from({ length: 60 }, (_, i) => `+line ${i} of the new file`).join("\n");
const patchArguments = JSON.stringify({
  patch: `*** Begin Patch\n*** Add File: notes.txt\n${patch}\n*** End Patch`,
});
const tools = [{ type: "function" as const, name: "apply_patch", parameters: { type: "object" } }];

function patchEngine(): ScriptedEngine {
  return new ScriptedEngine({
    script: () => ({ toolCalls: [{ name: "apply_patch", arguments: patchArguments }] }),
    tokensPerSecond: 500,
  });
}

function argumentDeltas(events: readonly ServerEvent[]): string[] {
  return events.flatMap((e) => (e.type === "response.function_call_arguments.delta" ? [e.delta] : []));
}

function callOf(output: readonly { type: string }[]): FunctionCallOutputItem | undefined {
  return output.find((item): item is FunctionCallOutputItem => item.type === "function_call");
}

describe.each([
  ["websocket", true],
  ["http", false],
] as const)(
  "ResponsesClient (%s): a function call's arguments reach the consumer as they stream",
  (transport, webSocket) => {
    test("many argument deltas before the call is done; final holds the whole call", async () => {
      await using t = await startTestServer(patchEngine());
      await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1`, webSocket });
      expect(client.transport).toBe(transport);
      const events = await collect(client.create({ model: "scripted", input: "write notes", tools }));
      const deltas = argumentDeltas(events);
      expect(deltas.length).toBeGreaterThan(10);
      expect(deltas.join("")).toBe(patchArguments);
      const lastDelta = events.findLastIndex((e) => e.type === "response.function_call_arguments.delta");
      expect(lastDelta).toBeLessThan(
        events.findIndex((e) => e.type === "response.function_call_arguments.done"),
      );
      const done = events.at(-1);
      expect(done?.type).toBe("response.completed");
      if (done?.type !== "response.completed") return;
      expect(callOf(done.response.output)).toMatchObject({ status: "completed", arguments: patchArguments });
    });

    test("cancelled mid-call: final is incomplete and the call incomplete, with the arguments so far", async () => {
      await using t = await startTestServer(patchEngine());
      await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1`, webSocket });
      const stream = client.create({ model: "scripted", input: "write notes", tools });
      const iterator = stream[Symbol.asyncIterator]();
      const seen = await readUntil(iterator, (e) => e.type === "response.function_call_arguments.delta");
      stream.cancel();
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) seen.push(next.value);
      const final = await stream.final;
      expect(final.status).toBe("incomplete");
      const call = callOf(final.output);
      expect(call?.status).toBe("incomplete");
      expect(call?.arguments.length).toBeGreaterThan(0);
      expect(patchArguments.startsWith(call?.arguments ?? "-")).toBe(true);
      expect(call?.arguments).not.toBe(patchArguments);
      expect(seen.some((e) => e.type === "response.function_call_arguments.done")).toBe(false);
    });
  },
);
