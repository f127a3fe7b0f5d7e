import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { SparkError } from "../protocol/errors.js";
import { listCachedModels } from "./model-cache.js";
import { type DownloadModelOptions, type DownloadProgress, downloadModel } from "./model-download.js";
import {
  closedPortEndpoint,
  type FakeHub,
  fakeGguf,
  sha256Hex,
  startFakeHub,
} from "./test-support/fake-hub.js";

const model = fakeGguf(512 * 1024);
const part1 = fakeGguf(300_000);
const part2 = fakeGguf(200_000);
const plain = fakeGguf(4096);
const corrupt = fakeGguf(4096);
const flaky = fakeGguf(4096);
const large = fakeGguf(40_000_000); // more than node-llama-cpp's downloader's 5 MB chunks
const URI = "hf:test-org/tiny-GGUF/tiny-q8_0.gguf";
const SPLIT_URI = "hf:test-org/split-GGUF/split-Q4_K_M-00001-of-00002.gguf";

let hub: FakeHub;
let cacheDir: string;

beforeAll(async () => {
  hub = await startFakeHub([
    { owner: "test-org", repo: "tiny-GGUF", file: "tiny-q8_0.gguf", content: model },
    { owner: "test-org", repo: "tiny-GGUF", file: "sub/unverified.gguf", content: plain, sha256: null },
    { owner: "test-org", repo: "tiny-GGUF", file: "corrupt.gguf", content: corrupt, sha256: "ab".repeat(32) },
    { owner: "test-org", repo: "tiny-GGUF", file: "large.gguf", content: large },
    { owner: "test-org", repo: "tiny-GGUF", file: "flaky.gguf", content: flaky, corruptGets: 1 },
    { owner: "test-org", repo: "split-GGUF", file: "split-Q4_K_M-00001-of-00002.gguf", content: part1 },
    { owner: "test-org", repo: "split-GGUF", file: "split-Q4_K_M-00002-of-00002.gguf", content: part2 },
    { owner: "test-org", repo: "split-GGUF", file: "split-Q8_0.gguf", content: plain },
    { owner: "test-org", repo: "gated", file: "m.gguf", content: plain, status: 403 },
  ]);
});
afterAll(async () => {
  await hub.close();
});
beforeEach(async () => {
  cacheDir = await mkdtemp(join(tmpdir(), "spark-download-"));
  hub.requests.length = 0;
});
afterEach(async () => {
  await rm(cacheDir, { recursive: true, force: true });
});

function options(extra: DownloadModelOptions = {}): DownloadModelOptions {
  return { cacheDir, endpoint: hub.endpoint, env: {}, ...extra };
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

/** Bytes the ranged CDN GETs asked for (`bytes=a-b`). */
function rangedBytes(): number {
  return cdnGets().reduce((sum, r) => {
    const [, a, b] = r.range?.match(/^bytes=(\d+)-(\d+)$/) ?? [];
    return a === undefined ? sum : sum + Number(b) - Number(a) + 1;
  }, 0);
}

describe("downloadModel", () => {
  it("downloads into the cache in node-llama-cpp's layout, verifies the sha256 and reports progress up to the total", async () => {
    const events: DownloadProgress[] = [];
    const result = await downloadModel(URI, options({ onProgress: (p) => events.push(p) }));
    const path = join(cacheDir, "hf_test-org_tiny-q8_0.gguf");
    expect(result).toEqual({
      uri: URI,
      path,
      files: [path],
      bytes: model.length,
      verified: true,
      alreadyCached: false,
    });
    expect(await readFile(path)).toEqual(model);
    expect(hub.requests[0]).toMatchObject({
      method: "HEAD",
      path: "/test-org/tiny-GGUF/resolve/main/tiny-q8_0.gguf",
    });

    expect(events.length).toBeGreaterThan(0);
    for (let i = 1; i < events.length; i++) {
      expect(events[i]!.receivedBytes).toBeGreaterThanOrEqual(events[i - 1]!.receivedBytes);
    }
    expect(events.at(-1)).toMatchObject({ receivedBytes: model.length, totalBytes: model.length });
    expect((await listCachedModels({ cacheDir })).map((m) => m.path)).toEqual([path]);

    hub.requests.length = 0;
    const again = await downloadModel(URI, options());
    expect(again).toMatchObject({ path, alreadyCached: true, bytes: model.length });
    expect(hub.requests).toEqual([]);
  });

  it("downloads every part of a split GGUF and verifies each", async () => {
    const events: DownloadProgress[] = [];
    const result = await downloadModel(SPLIT_URI, options({ onProgress: (p) => events.push(p) }));
    const files = [1, 2].map((n) => join(cacheDir, `hf_test-org_split-Q4_K_M-0000${n}-of-00002.gguf`));
    expect(result).toMatchObject({
      path: files[0],
      files,
      bytes: part1.length + part2.length,
      verified: true,
    });
    expect(await readFile(files[0]!)).toEqual(part1);
    expect(await readFile(files[1]!)).toEqual(part2);
    expect(hub.requests.filter((r) => r.method === "HEAD").map((r) => r.path)).toEqual([
      "/test-org/split-GGUF/resolve/main/split-Q4_K_M-00001-of-00002.gguf",
      "/test-org/split-GGUF/resolve/main/split-Q4_K_M-00002-of-00002.gguf",
    ]);
    expect(events.at(-1)).toMatchObject({
      receivedBytes: part1.length + part2.length,
      totalBytes: part1.length + part2.length,
    });
    expect(await listCachedModels({ cacheDir })).toEqual([
      expect.objectContaining({ path: files[0], files, bytes: part1.length + part2.length }),
    ]);
  });

  it("resolves a :quant tag through the hub's manifest, split parts included", async () => {
    const result = await downloadModel("hf:test-org/split-GGUF:Q4_K_M", options());
    expect(hub.requests[0]).toMatchObject({
      method: "GET",
      path: "/v2/test-org/split-GGUF/manifests/Q4_K_M",
    });
    const files = [1, 2].map((n) => join(cacheDir, `hf_test-org_split.Q4_K_M-0000${n}-of-00002.gguf`));
    expect(result).toMatchObject({
      uri: "hf:test-org/split-GGUF:Q4_K_M",
      path: files[0],
      files,
      verified: true,
    });
    expect(await readFile(files[1]!)).toEqual(part2);

    const other = await downloadModel("hf:test-org/split-GGUF:Q8_0", options());
    expect(other).toMatchObject({ path: join(cacheDir, "hf_test-org_split.Q8_0.gguf"), verified: true });
    expect(await readFile(other.path)).toEqual(plain);

    hub.requests.length = 0;
    expect(await downloadModel("hf:test-org/split-GGUF:Q4_K_M", options())).toMatchObject({
      alreadyCached: true,
    });
    expect(hub.requests).toEqual([]);
  });

  it("explains a :quant tag the repository does not have", async () => {
    const error = await failure(downloadModel("hf:test-org/split-GGUF:IQ2_XS", options()));
    expect(error.code).toBe("model_not_found");
    expect(error.message).toContain('No GGUF for "IQ2_XS" in test-org/split-GGUF');
  });

  it("stops reading a manifest past 1 MiB", async () => {
    const error = await failure(downloadModel("hf:test-org/split-GGUF:oversized-manifest", options()));
    expect(error.code).toBe("download_failed");
    expect(error.message).toContain("names no GGUF file (or is not JSON of at most 1 MiB)");
    expect(await readdir(cacheDir)).toEqual([]);
  });

  it("sends the HF token as a bearer token", async () => {
    await downloadModel(URI, options({ env: { HF_TOKEN: "hf_secret" } }));
    expect(hub.requests[0]?.authorization).toBe("Bearer hf_secret");
  });

  it("rejects a checksum mismatch, after downloading the file once more, and leaves no file behind", async () => {
    const warnings: string[] = [];
    const error = await failure(
      downloadModel("hf:test-org/tiny-GGUF/corrupt.gguf", options({ onWarning: (w) => warnings.push(w) })),
    );
    expect(error.code).toBe("checksum_mismatch");
    expect(error.message).toContain(sha256Hex(corrupt));
    expect(warnings).toEqual([expect.stringContaining("downloading it again")]);
    expect(cdnGets().filter((r) => r.range !== undefined)).toHaveLength(2);
    expect(await readdir(cacheDir)).toEqual([]);
  });

  it("a download that comes back corrupt once is downloaded again, with a warning, and verified", async () => {
    const warnings: string[] = [];
    const result = await downloadModel(
      "hf:test-org/tiny-GGUF/flaky.gguf",
      options({ onWarning: (w) => warnings.push(w) }),
    );
    expect(result.verified).toBe(true);
    expect(await readFile(result.path)).toEqual(flaky);
    expect(warnings).toEqual([expect.stringMatching(/flaky\.gguf .* is corrupt: .* downloading it again/)]);
    expect(cdnGets().filter((r) => r.range !== undefined)).toHaveLength(2);
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

  it("resumes an interrupted download from the chunks it already has", async () => {
    const controller = new AbortController();
    const stopped = await failure(
      downloadModel(
        "hf:test-org/tiny-GGUF/large.gguf",
        options({
          signal: controller.signal,
          onProgress: (p) => {
            if (p.receivedBytes > 30_000_000) controller.abort();
          },
        }),
      ),
    );
    expect(stopped.code).toBe("cancelled");
    expect(await readdir(cacheDir)).toEqual(["hf_test-org_tiny-GGUF_large.gguf.ipull"]);
    expect(await listCachedModels({ cacheDir })).toEqual([expect.objectContaining({ partial: true })]);

    hub.requests.length = 0;
    const result = await downloadModel("hf:test-org/tiny-GGUF/large.gguf", options());
    expect(rangedBytes()).toBeLessThan(large.length);
    expect(result.verified).toBe(true);
    expect(sha256Hex(await readFile(result.path))).toBe(sha256Hex(large)); // toEqual on 40 MB takes seconds
  });

  it("never leaves a file that passes as cached when a download is cancelled as it ends", async () => {
    const controller = new AbortController();
    const outcome = await downloadModel(
      "hf:test-org/tiny-GGUF/large.gguf",
      options({
        signal: controller.signal,
        onProgress: (p) => {
          if (p.receivedBytes === p.totalBytes) controller.abort();
        },
      }),
    ).catch((e: unknown) => e);
    expect(outcome).toMatchObject({ code: "cancelled" });
    hub.requests.length = 0;
    const result = await downloadModel("hf:test-org/tiny-GGUF/large.gguf", options());
    expect(sha256Hex(await readFile(result.path))).toBe(sha256Hex(large)); // toEqual on 40 MB takes seconds
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
    for (const uri of [URI, "hf:test-org/split-GGUF:Q4_K_M"]) {
      const error = await failure(downloadModel(uri, options({ endpoint })));
      expect(error.code).toBe("model_unavailable");
      expect(error.message).toContain(`Could not download model ${uri}`);
      expect(error.message).toContain("ECONNREFUSED");
      expect(error.message).toContain("--model /path/to/file.gguf");
      expect(error.message).toContain("spark models list");
      expect(error.message).toContain(cacheDir);
    }
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
    expect(existsSync(result.path)).toBe(true);
  });
});
