import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { SparkError } from "../protocol/errors.js";
import { cachedPath, listCachedModels, partialPath } from "./model-cache.js";
import { type DownloadModelOptions, type DownloadProgress, downloadModel } from "./model-download.js";
import {
  closedPortEndpoint,
  type FakeHub,
  fakeGguf,
  sha256Hex,
  startFakeHub,
} from "./test-support/fake-hub.js";

const SIZE = 512 * 1024;
const model = fakeGguf(SIZE);
const plain = fakeGguf(4096);
const corrupt = fakeGguf(4096);
const URI = "hf:test-org/tiny-GGUF/tiny-q8_0.gguf";

let hub: FakeHub;
let cacheDir: string;

beforeAll(async () => {
  hub = await startFakeHub([
    { owner: "test-org", repo: "tiny-GGUF", file: "tiny-q8_0.gguf", content: model },
    { owner: "test-org", repo: "tiny-GGUF", file: "sub/unverified.gguf", content: plain, sha256: null },
    { owner: "test-org", repo: "tiny-GGUF", file: "corrupt.gguf", content: corrupt, sha256: "ab".repeat(32) },
    { owner: "test-org", repo: "tiny-GGUF", file: "readme.gguf", content: Buffer.from("<html>hi</html>") },
    { owner: "test-org", repo: "gated", file: "m.gguf", content: plain, status: 403 },
  ]);
});
afterAll(async () => {
  await hub.close();
});
beforeEach(async () => {
  cacheDir = await mkdtemp(join(tmpdir(), "spark-download-"));
  hub.requests.length = 0;
  hub.ignoreRanges = false;
});
afterEach(async () => {
  await rm(cacheDir, { recursive: true, force: true });
});

function options(extra: DownloadModelOptions = {}): DownloadModelOptions {
  return { cacheDir, endpoint: hub.endpoint, env: {}, retryDelayMs: 0, ...extra };
}

async function failure(promise: Promise<unknown>): Promise<SparkError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SparkError);
  return error as SparkError;
}

function cdnGets() {
  return hub.requests.filter((r) => r.method === "GET" && r.path.startsWith("/cdn/"));
}

async function writePart(bytes: Buffer): Promise<string> {
  const part = partialPath(cachedPath(URI, { cacheDir }));
  await mkdir(dirname(part), { recursive: true });
  await writeFile(part, bytes);
  return part;
}

describe("downloadModel", () => {
  it("downloads into the cache, verifies the sha256 and reports progress up to the total", async () => {
    const events: DownloadProgress[] = [];
    const result = await downloadModel(URI, options({ onProgress: (p) => events.push(p) }));
    const path = cachedPath(URI, { cacheDir });
    expect(result).toMatchObject({
      uri: URI,
      path,
      bytes: SIZE,
      verified: true,
      resumed: false,
      alreadyCached: false,
    });
    expect(result.sha256).toBe(sha256Hex(model));
    expect(await readFile(path)).toEqual(model);
    expect(existsSync(partialPath(path))).toBe(false);
    expect(hub.requests[0]).toMatchObject({
      method: "HEAD",
      path: "/test-org/tiny-GGUF/resolve/main/tiny-q8_0.gguf",
    });

    expect(events.length).toBeGreaterThan(1);
    for (let i = 1; i < events.length; i++) {
      expect(events[i]!.receivedBytes).toBeGreaterThanOrEqual(events[i - 1]!.receivedBytes);
    }
    expect(events.at(-1)).toMatchObject({ receivedBytes: SIZE, totalBytes: SIZE });
    expect((await listCachedModels({ cacheDir })).map((m) => m.uri)).toEqual([URI]);

    const again = await downloadModel(URI, options());
    expect(again).toMatchObject({ path, alreadyCached: true, bytes: SIZE });
  });

  it("sends the HF token as a bearer token", async () => {
    await downloadModel(URI, options({ env: { HF_TOKEN: "hf_secret" } }));
    expect(hub.requests[0]?.authorization).toBe("Bearer hf_secret");
  });

  it("resumes an existing .part with a Range request", async () => {
    const offset = 100_000;
    await writePart(model.subarray(0, offset));
    const events: DownloadProgress[] = [];
    const result = await downloadModel(URI, options({ onProgress: (p) => events.push(p) }));
    expect(cdnGets().map((r) => r.range)).toEqual([`bytes=${offset}-`]);
    expect(result).toMatchObject({ resumed: true, verified: true, bytes: SIZE });
    expect(await readFile(result.path)).toEqual(model);
    expect(events[0]?.receivedBytes).toBe(offset);
    expect(events.at(-1)?.receivedBytes).toBe(SIZE);
  });

  it("starts over when the server ignores the Range header", async () => {
    await writePart(model.subarray(0, 1000));
    hub.ignoreRanges = true;
    const result = await downloadModel(URI, options());
    expect(cdnGets()).toHaveLength(1);
    expect(result.resumed).toBe(false);
    expect(await readFile(result.path)).toEqual(model);
  });

  it("finishes a .part that is already complete without downloading", async () => {
    await writePart(model);
    const result = await downloadModel(URI, options());
    expect(cdnGets()).toHaveLength(0);
    expect(result).toMatchObject({ verified: true, resumed: true });
    expect(await readFile(result.path)).toEqual(model);
  });

  it("keeps the .part when the connection drops, and the next download resumes it", async () => {
    const half = SIZE / 2;
    hub.dropNextAfter(half);
    const error = await failure(downloadModel(URI, options({ retries: 0 })));
    expect(error.code).toBe("download_failed");
    expect(error.message).toContain("interrupted");
    const part = partialPath(cachedPath(URI, { cacheDir }));
    const kept = (await stat(part)).size;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThanOrEqual(half);
    expect(await listCachedModels({ cacheDir })).toEqual([]);

    const result = await downloadModel(URI, options());
    expect(cdnGets().map((r) => r.range)).toEqual([undefined, `bytes=${kept}-`]);
    expect(await readFile(result.path)).toEqual(model);
    expect(result.verified).toBe(true);
  });

  it("resumes automatically after a dropped connection", async () => {
    hub.dropNextAfter(SIZE / 4);
    const result = await downloadModel(URI, options());
    const ranges = cdnGets().map((r) => r.range);
    expect(ranges).toHaveLength(2);
    expect(ranges[0]).toBeUndefined();
    expect(ranges[1]).toMatch(/^bytes=\d+-$/);
    expect(await readFile(result.path)).toEqual(model);
  });

  it("gives up on a stalled transfer", async () => {
    hub.stallNextAfter(1000);
    const error = await failure(downloadModel(URI, options({ retries: 0, stallTimeoutMs: 300 })));
    expect(error.message).toContain("no data from");
    expect(error.message).toContain("0.3 s");
  });

  it("keeps the .part when aborted", async () => {
    const controller = new AbortController();
    const error = await failure(
      downloadModel(
        URI,
        options({
          signal: controller.signal,
          onProgress: (p) => {
            if (p.receivedBytes > 0) controller.abort();
          },
        }),
      ),
    );
    expect(error.code).toBe("cancelled");
    const part = partialPath(cachedPath(URI, { cacheDir }));
    expect((await stat(part)).size).toBeGreaterThan(0);
    expect((await stat(part)).size).toBeLessThan(SIZE);
    const result = await downloadModel(URI, options());
    expect(await readFile(result.path)).toEqual(model);
  });

  it("rejects a checksum mismatch and leaves no file behind", async () => {
    const uri = "hf:test-org/tiny-GGUF/corrupt.gguf";
    const error = await failure(downloadModel(uri, options()));
    expect(error.code).toBe("checksum_mismatch");
    expect(error.message).toContain(sha256Hex(corrupt));
    const path = cachedPath(uri, { cacheDir });
    expect(existsSync(path)).toBe(false);
    expect(existsSync(partialPath(path))).toBe(false);
    expect(await listCachedModels({ cacheDir })).toEqual([]);
    expect(await readdir(join(cacheDir, "hf"))).toEqual([]); // no empty directories left behind
  });

  it("accepts a file without a published sha256, with a warning", async () => {
    const warnings: string[] = [];
    const result = await downloadModel(
      "hf:test-org/tiny-GGUF/sub/unverified.gguf",
      options({ onWarning: (w) => warnings.push(w) }),
    );
    expect(result.verified).toBe(false);
    expect(warnings).toEqual([expect.stringContaining("not verified")]);
    expect(await readFile(result.path)).toEqual(plain);
  });

  it("rejects a download that is not a GGUF file", async () => {
    const error = await failure(downloadModel("hf:test-org/tiny-GGUF/readme.gguf", options()));
    expect(error.code).toBe("download_failed");
    expect(error.message).toContain("not a GGUF");
    expect(await listCachedModels({ cacheDir })).toEqual([]);
  });

  it("explains a missing file", async () => {
    const error = await failure(downloadModel("hf:test-org/tiny-GGUF/nope.gguf", options()));
    expect(error.code).toBe("model_not_found");
    expect(error.message).toContain('File "nope.gguf" was not found in test-org/tiny-GGUF');
    expect(cdnGets()).toHaveLength(0);
  });

  it("explains a missing or private repository", async () => {
    const error = await failure(downloadModel("hf:test-org/nope/x.gguf", options()));
    expect(error.code).toBe("model_not_found");
    expect(error.message).toContain("HF_TOKEN");
  });

  it("explains a gated model", async () => {
    const error = await failure(downloadModel("hf:test-org/gated/m.gguf", options()));
    expect(error.code).toBe("download_failed");
    expect(error.message).toContain("gated");
    expect(error.message).toContain("HF_TOKEN");
  });

  it("turns an unreachable hub into one offline error that points at --model", async () => {
    const endpoint = await closedPortEndpoint();
    const error = await failure(downloadModel(URI, options({ endpoint })));
    expect(error.code).toBe("model_unavailable");
    expect(error.message).toContain(`Could not download model ${URI}`);
    expect(error.message).toContain("ECONNREFUSED");
    expect(error.message).toContain("--model /path/to/file.gguf");
    expect(error.message).toContain("spark models list");
    expect(error.message).toContain(cacheDir);
    expect(await readdir(cacheDir)).toEqual([]);
  });

  it("reads the endpoint from SPARK_HF_ENDPOINT, then HF_ENDPOINT", async () => {
    const result = await downloadModel(URI, { cacheDir, env: { HF_ENDPOINT: `${hub.endpoint}/` } });
    expect(result.verified).toBe(true);
    const closed = await closedPortEndpoint();
    const error = await failure(
      downloadModel(URI, {
        cacheDir,
        force: true,
        env: { SPARK_HF_ENDPOINT: closed, HF_ENDPOINT: hub.endpoint },
      }),
    );
    expect(error.code).toBe("model_unavailable");
  });
});
