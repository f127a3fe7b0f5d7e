import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { SparkError } from "../protocol/errors.js";
import { readKeyFile } from "./key-flags.js";
import type { ServingFlags } from "./serving-flags.js";

/** `spark serve`'s flags, as commander parses them. */
export interface ServeOptions extends ServingFlags {
  model?: string;
  draftModel?: string;
  engine: "llama" | "upstream";
  host: string;
  port: number;
  apiKey: string[];
  /** Files holding a key each (`--api-key-file`, repeatable). */
  apiKeyFile?: string[];
  /** False with `--no-auth`: no key at all (loopback only). */
  auth: boolean;
  allowOrigin: string[];
  ctxSize?: number;
  parallel: number;
  threads?: number;
  gpu: boolean;
  tlsCert?: string;
  tlsKey?: string;
  maxBodyMb: number;
  open: boolean;
}

/** Refuses flags that contradict each other, before anything starts. */
export function checkServeOptions(options: ServeOptions): void {
  if (Boolean(options.tlsCert) !== Boolean(options.tlsKey)) {
    throw new SparkError("invalid_request", "--tls-cert and --tls-key go together.");
  }
  if (options.draftModel && options.engine !== "llama") {
    throw new SparkError("invalid_request", "--draft-model needs the llama engine.");
  }
}

/** The certificate and key `--tls-cert` and `--tls-key` name; undefined without them (plain HTTP). */
export function readTls(
  options: Pick<ServeOptions, "tlsCert" | "tlsKey">,
): { cert: Buffer; key: Buffer } | undefined {
  if (!options.tlsCert || !options.tlsKey) return undefined;
  return { cert: readFileSync(options.tlsCert), key: readFileSync(options.tlsKey) };
}

/**
 * The keys `spark serve` requires: `--api-key`, `--api-key-file` and SPARK_API_KEY, else one random key (32 bytes,
 * base64url). `--no-auth` requires none, and is refused off loopback or together with a key.
 */
export function serveKeys(
  options: Pick<ServeOptions, "apiKey" | "apiKeyFile" | "auth" | "host">,
  env: NodeJS.ProcessEnv,
): string[] {
  const given = [
    ...options.apiKey,
    ...(options.apiKeyFile ?? []).map((file) => readKeyFile(file, "--api-key-file")),
    ...(env.SPARK_API_KEY ? [env.SPARK_API_KEY] : []),
  ];
  if (options.auth) return given.length > 0 ? given : [randomBytes(32).toString("base64url")];
  if (given.length > 0) {
    throw new SparkError(
      "invalid_request",
      "--no-auth and an API key (--api-key, --api-key-file or SPARK_API_KEY) contradict each other: pass one.",
    );
  }
  if (!isLoopbackHost(options.host)) {
    throw new SparkError(
      "invalid_request",
      `--no-auth is only for a loopback address, not --host ${options.host}: anyone who can reach it could run commands in this workspace. Drop --no-auth (a key is made for you) or bind 127.0.0.1.`,
    );
  }
  return [];
}

/** Whether `host` (a --host value) is this machine only. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  return bare === "localhost" || bare === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}
