import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SparkError } from "../protocol/errors.js";
import { DEFAULT_MODEL, parseHfUri, parseModelSpec } from "./model-uri.js";

const dir = mkdtempSync(join(tmpdir(), "spark-model-uri-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function thrown(fn: () => unknown): SparkError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(SparkError);
    return error as SparkError;
  }
  throw new Error("expected an error");
}

describe("parseHfUri", () => {
  it("parses the default model", () => {
    expect(parseHfUri(DEFAULT_MODEL)).toEqual({
      kind: "hf",
      owner: "Qwen",
      repo: "Qwen2.5-Coder-1.5B-Instruct-GGUF",
      file: "qwen2.5-coder-1.5b-instruct-q8_0.gguf",
      branch: "main",
      uri: DEFAULT_MODEL,
      name: "qwen2.5-coder-1.5b-instruct-q8_0",
    });
  });

  it("parses nested files and branches, and canonicalises the URI", () => {
    const ref = parseHfUri("hf:my-org/my_repo.v2/sub/dir/model-Q4_0.gguf#v1.0");
    expect(ref).toMatchObject({
      owner: "my-org",
      repo: "my_repo.v2",
      file: "sub/dir/model-Q4_0.gguf",
      branch: "v1.0",
      name: "model-Q4_0",
    });
    expect(ref.uri).toBe("hf:my-org/my_repo.v2/sub/dir/model-Q4_0.gguf#v1.0");
    expect(parseHfUri("hf://a/b/c.gguf#main").uri).toBe("hf:a/b/c.gguf");
    expect(parseHfUri("hf:a/b/c.gguf#0123456789abcdef0123456789abcdef01234567").branch).toHaveLength(40);
  });

  it("parses a repository with or without a quantization tag", () => {
    expect(parseHfUri("hf:bartowski/Qwen2.5-Coder-7B-Instruct-GGUF:Q4_K_M")).toEqual({
      kind: "hf",
      owner: "bartowski",
      repo: "Qwen2.5-Coder-7B-Instruct-GGUF",
      tag: "Q4_K_M",
      branch: "main",
      uri: "hf:bartowski/Qwen2.5-Coder-7B-Instruct-GGUF:Q4_K_M",
      name: "Qwen2.5-Coder-7B-Instruct-GGUF:Q4_K_M",
    });
    expect(parseHfUri("hf:o/r")).toEqual({
      kind: "hf",
      owner: "o",
      repo: "r",
      branch: "main",
      uri: "hf:o/r",
      name: "r",
    });
  });

  it.each([
    ["hf:owner", "repository"],
    ["hf:owner/repo:", "quantization tag"],
    ["hf:owner/repo:Q4:K", 'more than one ":tag"'],
    ["hf:owner/repo:Q4/x.gguf", "repository"],
    ["hf:owner/repo/model.bin", ".gguf"],
    ["hf:own er/repo/x.gguf", "owner"],
    ["hf:owner/re$po/x.gguf", "repository"],
    ["hf:../repo/x.gguf", "owner"],
    ["hf:owner/repo/../x.gguf", "'..'"],
    ["hf:owner/repo/a//b.gguf", "empty"],
    ["hf:owner/repo/.hidden/x.gguf", "not a valid file name"],
    ["hf:owner/repo/x.gguf#", "branch"],
    ["hf:owner/repo/x.gguf#../main", "branch"],
    ["hf:owner/repo/x.gguf@v1", ".gguf"],
    ["owner/repo/x.gguf", 'starts with "hf:"'],
  ])("rejects %s", (spec, reason) => {
    const error = thrown(() => parseHfUri(spec));
    expect(error.code).toBe("invalid_request");
    expect(error.message).toContain(reason);
    expect(error.message).toContain("hf:owner/repo:Q4_K_M");
    expect(error.message).toContain("./path/to/model.gguf");
  });
});

describe("parseModelSpec", () => {
  const model = join(dir, "model.gguf");
  writeFileSync(model, Buffer.concat([Buffer.from("GGUF"), Buffer.alloc(16)]));
  const notGguf = join(dir, "notes.txt");
  writeFileSync(notGguf, "hello world");
  mkdirSync(join(dir, "folder.gguf"));

  it("accepts hf: URIs", () => {
    expect(parseModelSpec(` ${DEFAULT_MODEL} `)).toMatchObject({ kind: "hf", uri: DEFAULT_MODEL });
  });

  it("accepts absolute, relative and ~ paths to a GGUF file", () => {
    expect(parseModelSpec(model)).toEqual({ kind: "local", path: model });
    expect(parseModelSpec("./model.gguf", { cwd: dir })).toEqual({ kind: "local", path: model });
    expect(parseModelSpec("~/model.gguf", { homeDir: dir })).toEqual({ kind: "local", path: model });
  });

  it("says clearly when the file does not exist", () => {
    const error = thrown(() => parseModelSpec("./missing.gguf", { cwd: dir }));
    expect(error.code).toBe("model_not_found");
    expect(error.message).toContain(join(dir, "missing.gguf"));
    expect(error.message).toContain("--model");
  });

  it("rejects directories and files that are not GGUF", () => {
    expect(thrown(() => parseModelSpec(join(dir, "folder.gguf"))).message).toContain("not a file");
    const error = thrown(() => parseModelSpec(notGguf));
    expect(error.code).toBe("invalid_request");
    expect(error.message).toContain("not a GGUF");
  });

  it("rejects URLs and empty specs with the expected forms", () => {
    for (const spec of ["https://huggingface.co/a/b/resolve/main/c.gguf", "  "]) {
      const error = thrown(() => parseModelSpec(spec));
      expect(error.code).toBe("invalid_request");
      expect(error.message).toContain("Expected one of");
    }
  });
});
