import { CodedError, SparkError } from "../protocol/errors.js";
import type { HfModelRef } from "./model-uri.js";

/**
 * The errors a model download ends with. Whatever goes wrong, the caller sees ONE SparkError whose
 * message says what happened and what to do: above all, that Spark runs offline from a local GGUF.
 */

export interface DownloadErrorContext {
  ref: HfModelRef;
  /** The resolve URL that was requested. */
  url: string;
  endpoint: string;
  cacheDir: string;
  partPath: string;
  hasToken: boolean;
}

/** A transport-level failure (no route, refused, reset, stalled); `progressed` when bytes arrived first. */
export class NetworkFailure extends CodedError<"network_failure"> {
  constructor(
    readonly reason: string,
    readonly progressed: boolean,
    cause?: unknown,
  ) {
    super("network_failure", reason, { cause });
    this.name = "NetworkFailure";
  }
}

/** The caller's signal aborted the download. */
export class Cancelled extends CodedError<"cancelled"> {
  constructor(options: { cause?: unknown } = {}) {
    super("cancelled", "cancelled", options);
    this.name = "Cancelled";
  }
}

/** The lines every "cannot download" error ends with: how to run Spark without the network. */
export function offlineHint(cacheDir: string): string {
  return [
    "Spark works offline with a local GGUF file: spark serve --model /path/to/file.gguf",
    `Models already downloaded are listed by: spark models list (cache: ${cacheDir})`,
    'Or run "spark models pull <uri>" on a connected machine and copy its cache directory here.',
  ].join("\n");
}

const NETWORK_REASONS: Record<string, (host: string) => string> = {
  ENOTFOUND: (host) => `cannot resolve ${host} (no network or DNS)`,
  EAI_AGAIN: (host) => `cannot resolve ${host} (no network or DNS)`,
  ECONNREFUSED: (host) => `connection to ${host} refused`,
  ECONNRESET: (host) => `connection to ${host} reset`,
  ETIMEDOUT: (host) => `connection to ${host} timed out`,
  EHOSTUNREACH: (host) => `${host} is unreachable`,
  ENETUNREACH: () => "the network is unreachable",
  EPIPE: (host) => `connection to ${host} closed`,
  UND_ERR_CONNECT_TIMEOUT: (host) => `connection to ${host} timed out`,
  UND_ERR_SOCKET: (host) => `connection to ${host} closed unexpectedly`,
  UND_ERR_HEADERS_TIMEOUT: (host) => `${host} did not answer`,
  UND_ERR_BODY_TIMEOUT: (host) => `${host} stopped sending data`,
};

/** A human reason for a fetch/stream failure, or null when it is not a network failure at all. */
export function networkReason(error: unknown, host: string): string | null {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    const code = (current as NodeJS.ErrnoException).code;
    const describe = code === undefined ? undefined : NETWORK_REASONS[code];
    if (describe !== undefined) return `${describe(host)} (${code})`;
    if (code?.startsWith("ERR_TLS") || code?.includes("CERT"))
      return `TLS error talking to ${host} (${code})`;
    current = current.cause;
  }
  if (error instanceof TypeError && /fetch failed|terminated|network/i.test(error.message)) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
    return `network error talking to ${host} (${error.message}${cause})`;
  }
  return null;
}

export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

/** The message for an HTTP error answer, using the hub's `X-Error-Code` when present. */
export function httpError(ctx: DownloadErrorContext, response: Response): SparkError {
  const { ref, endpoint } = ctx;
  const repoUrl = `${endpoint}/${ref.owner}/${ref.repo}`;
  const hubCode = response.headers.get("x-error-code");
  const status = response.status;
  const tokenHelp = ctx.hasToken
    ? "HF_TOKEN is set but does not grant access to it"
    : "set HF_TOKEN to a Hugging Face access token (https://huggingface.co/settings/tokens)";
  if (hubCode === "GatedRepo" || (status === 403 && hubCode !== "RepoNotFound")) {
    return new SparkError(
      "download_failed",
      `Model ${ref.uri} is gated or private (HTTP ${status}): accept its terms at ${repoUrl} while signed in, ` +
        `then ${tokenHelp}.`,
    );
  }
  if (hubCode === "RevisionNotFound") {
    return new SparkError(
      "model_not_found",
      `Revision "${ref.revision}" was not found in ${ref.owner}/${ref.repo} (HTTP ${status}). Check the branch, tag or commit after "@".`,
    );
  }
  if (hubCode === "EntryNotFound" || (status === 404 && hubCode !== "RepoNotFound")) {
    return new SparkError(
      "model_not_found",
      `File "${ref.file}" was not found in ${ref.owner}/${ref.repo} at revision "${ref.revision}" (HTTP ${status}). ` +
        `Check the repository and file name: ${repoUrl}/tree/${ref.revision}`,
    );
  }
  if (hubCode === "RepoNotFound" || status === 401) {
    return new SparkError(
      status === 404 || hubCode === "RepoNotFound" ? "model_not_found" : "download_failed",
      `Repository ${ref.owner}/${ref.repo} was not found or needs authentication (HTTP ${status}). ` +
        `Check the name at ${repoUrl}; for a private or gated model, ${tokenHelp}.`,
    );
  }
  const retry = status >= 500 ? " The hub had an internal error; try again later." : "";
  return new SparkError(
    "download_failed",
    `Could not download model ${ref.uri}: HTTP ${status} ${response.statusText} from ${hostOf(ctx.url)}.${retry}\n` +
      offlineHint(ctx.cacheDir),
  );
}

/** Turns whatever ended a download into the one SparkError the caller sees. */
export function finalError(ctx: DownloadErrorContext, error: unknown): unknown {
  if (error instanceof SparkError) return error;
  const { ref } = ctx;
  if (error instanceof Cancelled) {
    return new SparkError(
      "cancelled",
      `Download of ${ref.uri} cancelled; the partial file ${ctx.partPath} is kept and the next download resumes it.`,
      { cause: error },
    );
  }
  if (error instanceof NetworkFailure) {
    if (!error.progressed) {
      return new SparkError(
        "model_unavailable",
        `Could not download model ${ref.uri}: ${error.reason}.\n${offlineHint(ctx.cacheDir)}`,
        { cause: error },
      );
    }
    return new SparkError(
      "download_failed",
      `Download of ${ref.uri} was interrupted: ${error.reason}. The partial file is kept; run the same ` +
        `command again to resume.\n${offlineHint(ctx.cacheDir)}`,
      { cause: error },
    );
  }
  const message = error instanceof Error ? error.message : String(error);
  return new SparkError("download_failed", `Download of ${ref.uri} to ${ctx.partPath} failed: ${message}`, {
    cause: error,
  });
}
