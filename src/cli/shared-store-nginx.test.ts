import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { connect, createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import WebSocket from "ws";
import { NO_REDIS_REASON, sharedTestRedis } from "../server/test-support/redis-server.js";
import { startWorkspaceServe, type WorkspaceServe } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

const NGINX = "/usr/sbin/nginx";
const SKIP = NO_REDIS_REASON ?? (existsSync(NGINX) ? null : "no nginx (apt-get install nginx-light)");
const KEY = "shared-store-test-key";

/**
 * The README's nginx set-up: round robin over the instances for HTTP (any instance continues any
 * chain through the shared store), a WebSocket kept on the instance it was opened on, and the
 * instance that answered named in a header for the test.
 */
function nginxConfig(dir: string, port: number, instances: number[]): string {
  return `
daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  map $http_upgrade $connection_upgrade { default upgrade; '' close; }
  upstream spark {
${instances.map((p) => `    server 127.0.0.1:${p} max_fails=1 fail_timeout=60s;`).join("\n")}
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://spark;
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_buffering off;
      proxy_read_timeout 1h;
      proxy_next_upstream error timeout;
      add_header X-Spark-Upstream $upstream_addr always;
    }
  }
}
`;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Resolves once something accepts connections on the port (nginx prints nothing when ready). */
async function accepting(port: number, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error("nginx exited");
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on ${port}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function portOf(serve: WorkspaceServe): number {
  return Number(new URL(serve.state.url).port);
}

type Usage = {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number; chain_recomputed?: true };
};

describe.skipIf(SKIP !== null)(
  `two spark serve instances sharing a Redis store behind nginx${SKIP ? ` (skipped: ${SKIP})` : ""}`,
  () => {
    let redis: { url: string; stop(): Promise<void> };
    let instances: WorkspaceServe[] = [];
    let nginx: ChildProcess;
    let dir: string;
    let base: string;

    beforeAll(async () => {
      redis = await sharedTestRedis();
      const env = { ...testEngineEnv(), SPARK_API_KEY: KEY };
      instances = await Promise.all(
        [0, 1].map(() => startWorkspaceServe(["--store", redis.url, "--log", "off"], env)),
      );
      dir = await mkdtemp(path.join(os.tmpdir(), "spark-nginx-"));
      await mkdir(path.join(dir, "body"));
      const port = await freePort();
      await writeFile(path.join(dir, "nginx.conf"), nginxConfig(dir, port, instances.map(portOf)));
      nginx = spawn(
        NGINX,
        ["-p", dir, "-c", path.join(dir, "nginx.conf"), "-e", path.join(dir, "error.log")],
        {
          stdio: ["ignore", "ignore", "pipe"],
        },
      );
      await accepting(port, nginx);
      base = `http://127.0.0.1:${port}`;
    });

    afterAll(async () => {
      if (nginx && nginx.exitCode === null) {
        const gone = new Promise((resolve) => nginx.once("exit", resolve));
        nginx.kill("SIGTERM");
        await gone;
      }
      await Promise.all(instances.map((instance) => instance.stop()));
      await redis?.stop();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    test("a WebSocket stays on its instance: the follow-up reuses that instance's KV state", async () => {
      const ws = new WebSocket(`${base.replace("http", "ws")}/v1/responses`, {
        headers: { authorization: `Bearer ${KEY}` },
      });
      const finals: { id: string; usage: Usage }[] = [];
      let resolveNext: (() => void) | null = null;
      ws.on("message", (data) => {
        const event = JSON.parse(String(data)) as { type: string; response?: { id: string; usage: Usage } };
        if (event.type === "response.completed" && event.response) {
          finals.push(event.response);
          resolveNext?.();
        }
        if (event.type === "error") throw new Error(String(data));
      });
      await new Promise((resolve, reject) => {
        ws.once("open", resolve);
        ws.once("error", reject);
      });
      const turn = (body: object) =>
        new Promise<void>((resolve) => {
          resolveNext = resolve;
          ws.send(JSON.stringify({ type: "response.create", model: "scripted", ...body }));
        });
      await turn({ input: "one over the socket" });
      await turn({ input: "two over the socket", previous_response_id: finals[0]!.id });
      ws.close();
      const [, second] = finals;
      expect(second!.usage.input_tokens_details.cached_tokens).toBeGreaterThan(0);
      expect(second!.usage.input_tokens_details.chain_recomputed).toBeUndefined();
    });

    test("an HTTP chain goes on whichever instance answers, and on the other when one is killed", async () => {
      const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: KEY, maxRetries: 0 });
      const turn = async (input: string, previous?: string) => {
        const { data, response } = await client.responses
          .create({ model: "scripted", input, ...(previous ? { previous_response_id: previous } : {}) })
          .withResponse();
        expect(data.status).toBe("completed");
        expect(data.output_text).toBe(`You said: ${input}`);
        return {
          id: data.id,
          usage: data.usage as unknown as Usage,
          upstream: response.headers.get("x-spark-upstream"),
        };
      };

      const t1 = await turn("one");
      const t2 = await turn("two", t1.id);
      const t3 = await turn("three", t2.id);
      // Round robin: the turns alternate between the instances.
      expect(t2.upstream).not.toBe(t1.upstream);
      expect(t3.upstream).toBe(t1.upstream);
      // Each turn got the whole chain (its prompt grows), though the instance had not run the turn before.
      expect(t2.usage.input_tokens).toBeGreaterThan(t1.usage.input_tokens);
      expect(t3.usage.input_tokens).toBeGreaterThan(t2.usage.input_tokens);
      // t2 ran where nothing of the conversation was held: all recomputed, and it says so.
      expect(t2.usage.input_tokens_details).toEqual({ cached_tokens: 0, chain_recomputed: true });
      // t3's instance held t1 but not t2: the part it held is reused, the rest recomputed.
      expect(t3.usage.input_tokens_details.chain_recomputed).toBe(true);
      expect(t3.usage.input_tokens_details.cached_tokens).toBeGreaterThan(0);

      const killed = instances.find((instance) => t3.upstream === `127.0.0.1:${portOf(instance)}`)!;
      const gone = new Promise((resolve) => killed.child.once("exit", resolve));
      killed.child.kill("SIGKILL");
      await gone;

      const t4 = await turn("four", t3.id);
      expect(t4.upstream).not.toBe(t3.upstream);
      expect(t4.usage.input_tokens).toBeGreaterThan(t3.usage.input_tokens);
      expect(t4.usage.input_tokens_details.chain_recomputed).toBe(true);
      // Round robin now names the dead instance first: nginx passes the turn on to the live one, which
      // ran t4 itself and goes on from its own KV state.
      const t5 = await turn("five", t4.id);
      expect(t5.upstream).toBe(`${t3.upstream}, ${t4.upstream}`); // nginx lists every instance it tried
      expect(t5.usage.input_tokens_details.chain_recomputed).toBeUndefined();
      expect(t5.usage.input_tokens_details.cached_tokens).toBeGreaterThan(t4.usage.input_tokens);
    });
  },
);
