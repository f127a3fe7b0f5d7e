import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { request } from "node:http";
import os from "node:os";
import path from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { connectHost } from "../host/test-support/host-client.js";
import {
  deepJson,
  hostileFrames,
  mutatedBody,
  Random,
  randomJson,
} from "../server/test-support/fuzz-inputs.js";
import { clientFrame, closePayload, RawWebSocket } from "../server/test-support/raw-websocket.js";
import { sparkBin as bin } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

/**
 * Hostile input against the real `spark serve` process (the scripted engine): malformed frames and
 * messages on every WebSocket endpoint and refused upgrades, malformed bodies on every POST. The
 * process must keep serving, answer every client mistake with a 4xx (never a 5xx or `server_error`)
 * and keep its memory bounded. Replay a failure with the seed it prints: SPARK_FUZZ_SEED=<seed>.
 */
const seed = Number(process.env.SPARK_FUZZ_SEED ?? 11_2025);
const ROUNDS = Number(process.env.SPARK_FUZZ_ROUNDS ?? 200);
/** Growth of the server's resident memory over the whole run that counts as a leak. */
const RSS_GROWTH_LIMIT = 256 * 1024 * 1024;

interface Serve {
  child: ChildProcess;
  url: string;
}

/** Starts `spark serve` on the scripted engine, on a free port; resolves once it printed its address. */
async function startServe(): Promise<Serve> {
  const cwd = await mkdtemp(path.join(os.tmpdir(), "spark-fuzz-"));
  execFileSync("git", ["init", "-q"], { cwd });
  const sessions = await mkdtemp(path.join(os.tmpdir(), "spark-fuzz-sessions-"));
  const child = spawn(
    process.execPath,
    // Without a key the fuzz reaches past authentication into every parser.
    [bin, "serve", "--port", "0", "--log", "off", "--no-auth"],
    {
      cwd,
      env: { ...process.env, SPARK_SESSIONS_DIR: sessions, SPARK_HOME: sessions, ...testEngineEnv() },
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  let stderr = "";
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr?.on("data", (chunk) => {
      stderr += chunk;
      const match = /HTTP\s+(http:\/\/\S+)\/v1/.exec(stderr);
      if (match) resolve(match[1]!);
    });
    child.once("exit", () => reject(new Error(`spark serve exited early:\n${stderr}`)));
  });
  return { child, url };
}

/** Resident memory of a process, from /proc (Linux). */
function residentBytes(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return Number(kb) * 1024;
}

function post(url: string, route: string, body: string, contentType: string | undefined) {
  return new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = request(`${url}${route}`, {
      method: "POST",
      headers: contentType === undefined ? {} : { "content-type": contentType },
    });
    req.on("response", (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk) => {
        text += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

const VALID_BODIES: Record<string, Record<string, unknown>> = {
  "/v1/responses": { model: "scripted", input: "hi" },
  "/v1/chat/completions": { model: "scripted", messages: [{ role: "user", content: "hi" }] },
};
const CONTENT_TYPES = [
  "text/plain",
  "text/html",
  "image/png",
  "application/x-www-form-urlencoded",
  undefined,
];

/** One hostile POST: a broken field, random JSON, a truncated body, a wrong media type or deep nesting. */
function hostileBody(random: Random): { route: string; body: string; contentType?: string; name: string } {
  const route = random.pick(Object.keys(VALID_BODIES));
  const valid = VALID_BODIES[route]!;
  const json = "application/json";
  switch (random.int(0, 4)) {
    case 0:
      return { route, body: mutatedBody(random, valid), contentType: json, name: "a broken field" };
    case 1:
      return { route, body: randomJson(random), contentType: json, name: "random JSON" };
    case 2: {
      const text = JSON.stringify(valid);
      return {
        route,
        body: text.slice(0, random.int(0, text.length - 1)),
        contentType: json,
        name: "a truncated body",
      };
    }
    case 3: {
      const contentType = random.pick(CONTENT_TYPES);
      return {
        route,
        body: JSON.stringify(valid),
        name: `Content-Type ${contentType}`,
        ...(contentType ? { contentType } : {}),
      };
    }
    default:
      return { route, body: deepJson(random), contentType: json, name: "deep nesting" };
  }
}

/** The endpoints an upgrade may ask for, refused ones included. */
const UPGRADES: { path: string; key?: string; headers?: Record<string, string> }[] = [
  { path: "/v1/responses" },
  { path: "/v1/agent" },
  { path: "/v1/nowhere" },
  { path: "/constructor" },
  { path: "/v1/agent", key: "not-a-key" },
  { path: "/v1/responses", headers: { "sec-websocket-version": "8" } },
  { path: "/v1/agent", headers: { origin: "https://evil.example" } },
];

/** Error events of either endpoint (`{type: "error", error: {type, code}}`) a connection received. */
function errorTypes(messages: string[]): string[] {
  return messages
    .map((message) => JSON.parse(message) as { type?: string; error?: { type?: string } })
    .filter((event) => event.type === "error" || event.type === "response.failed")
    .map((event) => event.error?.type ?? "none");
}

describe(`spark serve under hostile input (seed ${seed}, ${ROUNDS} rounds)`, () => {
  let serve: Serve;
  beforeAll(async () => {
    serve = await startServe();
  });
  afterAll(() => {
    serve.child.kill("SIGKILL");
  });

  test("keeps serving, answers every mistake with a 4xx, and keeps its memory bounded", async () => {
    const random = new Random(seed);
    const { url, child } = serve;
    // Warm up every path once, so the baseline includes what a first request loads.
    await expectServing(url);
    const baseline = residentBytes(child.pid!);

    for (let round = 0; round < ROUNDS; round++) {
      const where = `seed ${seed}, round ${round}`;
      if (random.next() < 0.5) {
        const hostile = hostileBody(random);
        const reply = await post(url, hostile.route, hostile.body, hostile.contentType).catch((error) => {
          throw new Error(`${where}: ${hostile.name} on ${hostile.route}: ${error.message}`, {
            cause: error,
          });
        });
        expect(reply.status, `${where}: ${hostile.name} on ${hostile.route}`).toBeLessThan(500);
        expect(reply.text, `${where}: ${hostile.name} on ${hostile.route}`).not.toContain('"server_error"');
        continue;
      }
      const upgrade = random.pick(UPGRADES);
      const raw = await RawWebSocket.open(url, upgrade.path, upgrade);
      if (!raw.accepted) {
        raw.destroy();
        const { refusedStatus } = await raw.ended;
        const what = `${where}: a refused upgrade of ${upgrade.path}`;
        expect(refusedStatus, `${what}: no HTTP answer`).not.toBeNull();
        expect(refusedStatus, what).toBeGreaterThanOrEqual(400);
        expect(refusedStatus, what).toBeLessThan(500);
        continue;
      }
      const frames = hostileFrames(random);
      raw.write(frames.bytes);
      // A close frame ends a connection the frames left open; bytes a declared length still waits
      // for would swallow it, so those connections are dropped instead.
      if (frames.canClose) raw.write(clientFrame(0x8, closePayload(1000)));
      else raw.destroy();
      const outcome = await raw.ended;
      const what = `${where}: ${frames.name} on ${upgrade.path}`;
      expect([null, 1000, 1002, 1007, 1009], what).toContain(outcome.closeCode);
      expect(errorTypes(outcome.messages), what).not.toContain("server_error");
      expect(child.exitCode, `${what}: the server process exited`).toBeNull();
    }

    expect(child.exitCode, `seed ${seed}: the server process exited`).toBeNull();
    await expectServing(url);
    const growth = residentBytes(child.pid!) - baseline;
    expect(growth, `seed ${seed}: resident memory grew by ${growth} bytes`).toBeLessThan(RSS_GROWTH_LIMIT);
  });
});

/** `/healthz`, a Responses request, and an agent-host thread all still work. */
async function expectServing(url: string): Promise<void> {
  expect((await fetch(`${url}/healthz`)).status).toBe(200);
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 });
  const response = await client.responses.create({ model: "scripted", input: "ping" });
  expect(response.output_text).toBe("You said: ping");
  const chat = await client.chat.completions.create({
    model: "scripted",
    messages: [{ role: "user", content: "pong" }],
  });
  expect(chat.choices[0]?.message.content).toBe("You said: pong");
  const host = await connectHost(`${url.replace("http", "ws")}/v1/agent`);
  host.send({ type: "thread.start" });
  await expect(host.next((e) => e.type === "thread.started")).resolves.toMatchObject({ seq: 0 });
  host.ws.close();
}
