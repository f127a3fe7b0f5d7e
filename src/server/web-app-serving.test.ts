import { mkdir, mkdtemp, symlink, writeFile } from "node:fs/promises";
import { request } from "node:http";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import WebSocket from "ws";
import { ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import { startTestServer, type TestServer } from "./test-support/test-server.js";

const KEY = "s3cret/with=odd chars";
let t: TestServer;
let agentSockets = 0;

beforeAll(async () => {
  const root = await mkdtemp(path.join(os.tmpdir(), "spark-static-"));
  const web = path.join(root, "web");
  await mkdir(path.join(web, "assets"), { recursive: true });
  await writeFile(path.join(web, "index.html"), "<!doctype html><title>Spark</title>");
  await writeFile(path.join(web, "assets", "app-3F2KQ7XA.js"), "console.log(1)");
  await writeFile(path.join(web, "plain.css"), "body{}");
  await writeFile(path.join(web, ".hidden"), "secret");
  await writeFile(path.join(root, "outside.txt"), "OUTSIDE-CONTENT");
  await symlink(path.join(root, "outside.txt"), path.join(web, "link.txt"));
  t = await startTestServer(new ScriptedEngine(), {
    apiKeys: [KEY],
    staticDir: web,
    sockets: {
      "/v1/agent": (socket) => {
        agentSockets++;
        socket.send("hello");
      },
    },
  });
});

afterAll(async () => {
  await t[Symbol.asyncDispose]();
});

/** A raw request, so paths reach the server exactly as written (fetch would normalise `..`). */
function raw(method: string, rawPath: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: string }>(
    (resolve, reject) => {
      const req = request(`${t.url}${rawPath}`, { method, headers }, (res) => {
        let body = "";
        res.on("data", (chunk) => {
          body += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      });
      req.on("error", reject);
      req.end();
    },
  );
}

describe("serving the web app", () => {
  test("GET / is index.html with a strict page policy, no API key needed", async () => {
    const res = await raw("GET", "/");
    expect(res.status).toBe(200);
    expect(res.body).toContain("<title>Spark</title>");
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(res.headers["cache-control"]).toBe("no-cache");
    expect(res.headers["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
  });

  test("hashed assets are cached for good, others revalidated; HEAD has no body", async () => {
    const js = await raw("GET", "/assets/app-3F2KQ7XA.js");
    expect(js).toMatchObject({ status: 200, body: "console.log(1)" });
    expect(js.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect(js.headers["cache-control"]).toContain("immutable");
    const css = await raw("HEAD", "/plain.css");
    expect(css).toMatchObject({ status: 200, body: "" });
    expect(css.headers["content-type"]).toBe("text/css; charset=utf-8");
    expect(css.headers["content-length"]).toBe("6");
    expect(css.headers["cache-control"]).toBe("no-cache");
  });

  test.each([
    "/../outside.txt",
    "/assets/../../outside.txt",
    "/%2e%2e/outside.txt",
    "/assets%2f..%2f..%2foutside.txt",
    "/..%5coutside.txt",
    "/.hidden",
    "/link.txt",
    "/missing.js",
    "/assets",
    "/assets//app-3F2KQ7XA.js",
    "/%00",
    "/%E0%A4%A",
  ])("refuses %s with a 404", async (p) => {
    const res = await raw("GET", p);
    expect(res.status).toBe(404);
    expect(res.body).not.toContain("OUTSIDE-CONTENT");
    expect(res.body).not.toContain("secret");
  });

  test("API paths are never files, and still need the key", async () => {
    expect((await raw("GET", "/v1/index.html")).status).toBe(404);
    expect((await raw("GET", "/v1/models")).status).toBe(401);
    expect((await raw("GET", "/v1/models", { authorization: `Bearer ${KEY}` })).status).toBe(200);
    expect((await raw("POST", "/")).status).toBe(404);
  });

  test("a page from another origin gets nothing", async () => {
    expect((await raw("GET", "/", { origin: "https://evil.example" })).status).toBe(403);
  });
});

describe("browser authentication on WebSocket upgrades", () => {
  const url = () => `${t.url.replace("http", "ws")}/v1/agent`;
  const keyProtocol = (key: string) => `spark.key.${Buffer.from(key).toString("base64url")}`;

  function open(protocols: string[], options: WebSocket.ClientOptions = {}) {
    return new Promise<{ ws: WebSocket; protocol: string } | { status: number }>((resolve) => {
      const ws = new WebSocket(url(), protocols, options);
      ws.once("open", () => resolve({ ws, protocol: ws.protocol }));
      ws.once("unexpected-response", (_req, res) => resolve({ status: res.statusCode ?? 0 }));
    });
  }

  test("the key as a subprotocol opens the socket; only spark.v1 is echoed", async () => {
    const before = agentSockets;
    const result = await open(["spark.v1", keyProtocol(KEY)], { headers: { origin: t.url } });
    expect(result).toMatchObject({ protocol: "spark.v1" });
    if ("ws" in result) result.ws.close();
    expect(agentSockets).toBe(before + 1);
  });

  test("a wrong or missing key is refused with 401; the header still works", async () => {
    expect(await open(["spark.v1", keyProtocol("nope")])).toEqual({ status: 401 });
    expect(await open(["spark.v1"])).toEqual({ status: 401 });
    // A key in the query string is never looked at.
    const query = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`${url()}?key=${encodeURIComponent(KEY)}`);
      ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
    });
    expect(query).toBe(401);
    const header = await open([], { headers: { authorization: `Bearer ${KEY}` } });
    expect(header).toMatchObject({ protocol: "" });
    if ("ws" in header) header.ws.close();
  });

  test("another origin is refused even with the right key", async () => {
    const result = await open(["spark.v1", keyProtocol(KEY)], {
      headers: { origin: "https://evil.example" },
    });
    expect(result).toEqual({ status: 403 });
  });
});
