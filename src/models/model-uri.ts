import { closeSync, openSync, readSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { basename, isAbsolute, resolve } from "node:path";
import { SparkError } from "../protocol/errors.js";

/**
 * The model Spark downloads when none is given: Qwen2.5-Coder-1.5B-Instruct, the strongest small
 * coding instruct model that answers at interactive speed on a laptop CPU (~1.6 GB on disk).
 * The Q8_0 quantisation is deliberate: on CPUs, Q8_0 and Q4_0 GGUFs prompt-process about 3x faster
 * than K-quants (Q4_K_M and friends), and prompt processing dominates a coding assistant's latency
 * because every request carries file context. Q8_0 is also practically lossless at this size.
 */
export const DEFAULT_MODEL = "hf:Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/qwen2.5-coder-1.5b-instruct-q8_0.gguf";

/**
 * A model in a Hugging Face repository, in node-llama-cpp's URI forms: a file,
 * `hf:owner/repo/path/to/file.gguf[#branch]`, or a quantization the hub picks the file for,
 * `hf:owner/repo[:tag]` (e.g. `:Q4_K_M`; without a tag, the repository's default).
 */
export interface HfModelRef {
  kind: "hf";
  owner: string;
  repo: string;
  /** Path of the file inside the repository, `/`-separated; undefined for `hf:owner/repo[:tag]`. */
  file?: string;
  /** The quantization tag of `hf:owner/repo:tag`. */
  tag?: string;
  /** Branch, tag or commit of a file URI; `main` unless the URI says otherwise. */
  branch: string;
  /** The canonical URI, as node-llama-cpp spells it. */
  uri: string;
  /** A short name for the model: the file's name without `.gguf`, else `repo:tag`. */
  name: string;
}

/** A GGUF file on the local disk. */
export interface LocalModelRef {
  kind: "local";
  /** Absolute path of an existing file. */
  path: string;
}

export type ModelRef = HfModelRef | LocalModelRef;

export interface ParseModelSpecOptions {
  /** Directory relative paths are resolved against. Default: `process.cwd()`. */
  cwd?: string;
  /** What `~` expands to. Default: `os.homedir()`. */
  homeDir?: string;
}

const EXPECTED_FORMS = [
  "Expected one of:",
  "  ./path/to/model.gguf                      a GGUF file on this machine",
  "  hf:owner/repo:Q4_K_M                      a quantization in a Hugging Face repository",
  "  hf:owner/repo/path/to/file.gguf           a file in a Hugging Face repository",
  "  hf:owner/repo/path/to/file.gguf#branch    ... at a branch, tag or commit",
  `For example: ${DEFAULT_MODEL}`,
].join("\n");

/** Hugging Face owner and repository names: letters, digits, `-`, `_`, `.`; no leading punctuation. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$/;
/** One path segment of a file inside a repository. */
const FILE_SEGMENT = /^[A-Za-z0-9_+-][A-Za-z0-9._+-]*$/;
/** A branch, tag or commit hash; also a quantization tag. */
const REVISION = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const URL_SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

function invalid(spec: string, reason: string): SparkError {
  return new SparkError("invalid_request", `Invalid model "${spec}": ${reason}.\n${EXPECTED_FORMS}`, {
    param: "model",
  });
}

function checkName(spec: string, what: string, name: string): void {
  if (!NAME.test(name) || name.includes("..")) {
    throw invalid(spec, `"${name}" is not a valid ${what} name (letters, digits, "-", "_", ".")`);
  }
}

function checkRevision(spec: string, what: string, value: string): void {
  if (!REVISION.test(value) || value.includes("..")) throw invalid(spec, `"${value}" is not a valid ${what}`);
}

/** Parses `hf:owner/repo[:tag]` or `hf:owner/repo/path/to/file.gguf[#branch]`; throws `invalid_request` on anything else. */
export function parseHfUri(spec: string): HfModelRef {
  if (!spec.startsWith("hf:")) throw invalid(spec, 'a Hugging Face model URI starts with "hf:"');
  let body = spec.slice("hf:".length);
  if (body.startsWith("//")) body = body.slice(2); // tolerate hf://owner/repo/...
  const [owner = "", repoAndTag = "", ...fileParts] = body.split("/");
  if (fileParts.length === 0) {
    const [repo = "", tag, ...more] = repoAndTag.split(":");
    checkName(spec, "owner", owner);
    checkName(spec, "repository", repo);
    if (more.length > 0) throw invalid(spec, 'it has more than one ":tag"');
    if (tag !== undefined) checkRevision(spec, "quantization tag", tag);
    const suffix = tag === undefined ? "" : `:${tag}`;
    const uri = `hf:${owner}/${repo}${suffix}`;
    return {
      kind: "hf",
      owner,
      repo,
      ...(tag === undefined ? {} : { tag }),
      branch: "main",
      uri,
      name: repo + suffix,
    };
  }
  checkName(spec, "owner", owner);
  checkName(spec, "repository", repoAndTag);
  let last = fileParts.pop()!;
  let branch = "main";
  const hash = last.indexOf("#");
  if (hash !== -1) {
    branch = last.slice(hash + 1);
    last = last.slice(0, hash);
    checkRevision(spec, "branch, tag or commit", branch);
  }
  for (const segment of [...fileParts, last]) {
    if (segment === "" || segment === "." || segment === "..") {
      throw invalid(spec, "the file path has an empty, '.' or '..' segment");
    }
    if (!FILE_SEGMENT.test(segment) || segment.includes("..")) {
      throw invalid(spec, `"${segment}" is not a valid file name (letters, digits, "-", "_", ".", "+")`);
    }
  }
  if (!last.toLowerCase().endsWith(".gguf")) throw invalid(spec, "the file must be a .gguf file");
  const file = [...fileParts, last].join("/");
  const uri = `hf:${owner}/${repoAndTag}/${file}${branch === "main" ? "" : `#${branch}`}`;
  return { kind: "hf", owner, repo: repoAndTag, file, branch, uri, name: basename(last, ".gguf") };
}

/** Expands a leading `~` or `~/` and resolves the path to an absolute one. */
export function expandPath(path: string, options: ParseModelSpecOptions = {}): string {
  const home = options.homeDir ?? homedir();
  let expanded = path;
  if (path === "~") expanded = home;
  else if (path.startsWith("~/") || path.startsWith("~\\")) expanded = home + path.slice(1);
  return isAbsolute(expanded) ? resolve(expanded) : resolve(options.cwd ?? process.cwd(), expanded);
}

function hasGgufMagic(path: string): boolean {
  const fd = openSync(path, "r");
  try {
    const buffer = Buffer.alloc(4);
    return readSync(fd, buffer, 0, 4, 0) === 4 && buffer.toString("latin1") === "GGUF";
  } finally {
    closeSync(fd);
  }
}

/**
 * Parses a local GGUF path: `~` is expanded, relative paths resolve against `cwd`, and the file must
 * exist, be a regular file and start with the GGUF magic bytes.
 */
export function parseLocalPath(spec: string, options: ParseModelSpecOptions = {}): LocalModelRef {
  const path = expandPath(spec, options);
  const stats = statSync(path, { throwIfNoEntry: false });
  if (stats === undefined) {
    throw new SparkError(
      "model_not_found",
      `Model file not found: ${path}${spec === path ? "" : ` (from "${spec}")`}.\n` +
        `Pass the path of a .gguf file, e.g. spark serve --model ./path/to/model.gguf, or a Hugging Face URI ` +
        `such as ${DEFAULT_MODEL}.`,
      { param: "model" },
    );
  }
  if (!stats.isFile()) {
    throw new SparkError(
      "invalid_request",
      `Model path is not a file: ${path}. Pass the path of a .gguf file.`,
      {
        param: "model",
      },
    );
  }
  let magic: boolean;
  try {
    magic = hasGgufMagic(path);
  } catch (error) {
    throw new SparkError("invalid_request", `Cannot read model file ${path}: ${(error as Error).message}`, {
      param: "model",
      cause: error,
    });
  }
  if (!magic) {
    throw new SparkError(
      "invalid_request",
      `${path} is not a GGUF model file (it does not start with the GGUF magic bytes). ` +
        "Spark runs llama.cpp GGUF models; download one (e.g. spark models pull) or convert yours to GGUF.",
      { param: "model" },
    );
  }
  return { kind: "local", path };
}

/**
 * Parses a model spec: an `hf:` URI, or otherwise a local file path. Other URL schemes
 * (`https://...`) are rejected with the list of accepted forms.
 */
export function parseModelSpec(spec: string, options: ParseModelSpecOptions = {}): ModelRef {
  const trimmed = spec.trim();
  if (trimmed === "") throw invalid(spec, "it is empty");
  if (trimmed.startsWith("hf:")) return parseHfUri(trimmed);
  if (URL_SCHEME.test(trimmed)) {
    throw invalid(spec, "URLs are not supported; use an hf: URI or download the file and pass its path");
  }
  return parseLocalPath(trimmed, options);
}
