import { describe, expect, test } from "vitest";
import { ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import { startTestServer } from "../server/test-support/test-server.js";
import { ResponsesClient } from "./responses-client.js";
import { collect, deltas } from "./test-support/client-test-kit.js";
import { FrontProxy } from "./test-support/front-proxy.js";

const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(" ");

describe("ResponsesClient lanes", () => {
  test("two lanes of one client stream side by side over one connection", async () => {
    await using t = await startTestServer(new ScriptedEngine({ tokensPerSecond: 200 }));
    await using proxy = await FrontProxy.start(t.url, "relay");
    await using client = await ResponsesClient.connect({ baseUrl: `${proxy.url}/v1` });
    const a = client.lane();
    const b = client.lane();
    const long = a.create({ model: "scripted", input: words(40) });
    const short = b.create({ model: "scripted", input: "short" });
    const [longEvents, shortEvents] = [collect(long), collect(short)];
    expect((await short.final).status).toBe("completed");
    // Lane b did not wait behind lane a.
    expect(long.done).toBe(false);
    expect((await long.final).status).toBe("completed");
    expect(deltas(await longEvents)).toBe(`You said: ${words(40)}`);
    expect(deltas(await shortEvents)).toBe("You said: short");
    expect(new Set((await longEvents).map((e) => e.stream_id))).toEqual(new Set(["lane-1"]));
    expect(new Set((await shortEvents).map((e) => e.stream_id))).toEqual(new Set(["lane-2"]));
    // The default lane still works beside them, and everything used one connection.
    expect((await client.create({ model: "scripted", input: "plain" }).final).status).toBe("completed");
    expect(proxy.upgradeAttempts).toBe(1);
  });

  test("closing a lane cancels and ends its own streams; the connection and other lanes go on", async () => {
    await using t = await startTestServer(new ScriptedEngine({ tokensPerSecond: 200 }));
    await using client = await ResponsesClient.connect({ baseUrl: `${t.url}/v1` });
    const lane = client.lane();
    const doomed = lane.create({ model: "scripted", input: words(200) });
    await doomed.started;
    const other = client.lane().create({ model: "scripted", input: "still here" });
    await lane.close();
    await expect(doomed.final).rejects.toMatchObject({ code: "client_closed" });
    expect((await other.final).status).toBe("completed");
    await expect(lane.create({ input: "x" }).final).rejects.toMatchObject({ code: "client_closed" });
    // The server cancelled the lane's response: the lane is free for a new one at once.
    expect((await client.create({ model: "scripted", input: "after" }).final).status).toBe("completed");
  });

  test("at the server's lifetime cap the running response finishes and the next create reconnects", async () => {
    await using t = await startTestServer(new ScriptedEngine({ tokensPerSecond: 40 }), {
      connectionLifetimeMs: 200,
    });
    await using proxy = await FrontProxy.start(t.url, "relay");
    await using client = await ResponsesClient.connect({ baseUrl: `${proxy.url}/v1` });
    // Still streaming when the cap is reached: it finishes on the old connection.
    const spanning = client.create({ model: "scripted", input: words(20) });
    const events = await collect(spanning);
    expect((await spanning.final).status).toBe("completed");
    expect(events.some((e) => e.type === "error")).toBe(false);
    const next = client.create({ model: "scripted", input: "after the cap" });
    expect(deltas(await collect(next))).toBe("You said: after the cap");
    expect(client.transport).toBe("websocket");
    expect(proxy.upgradeAttempts).toBe(2);
  });
});
