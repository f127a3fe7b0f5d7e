import { ConnectionTimeoutError, ErrorReply, SocketClosedUnexpectedlyError } from "redis";
import { CodedError } from "../../protocol/errors.js";

/**
 * `unavailable`: no connection, it broke, or the command's time ran out (it may or may not have run);
 * `reply`: Redis answered this command with an error (`prefix` is its first word, e.g. `NOSCRIPT`,
 * `WRONGPASS`, `WRONGTYPE`).
 */
export class RedisError extends CodedError<"unavailable" | "reply"> {
  constructor(
    code: "unavailable" | "reply",
    message: string,
    readonly prefix: string | null = null,
    options: { cause?: unknown } = {},
  ) {
    super(code, message, options);
    this.name = "RedisError";
  }

  /** An error reply from Redis, as a `reply` error. */
  static fromReply(reply: ErrorReply): RedisError {
    return new RedisError("reply", reply.message, reply.message.split(" ", 1)[0] ?? "", { cause: reply });
  }

  /**
   * What went wrong with the connection to `where` (`host:port` or a socket path), in words that
   * name no credential: node-redis's and Node's own messages are not repeated, only their codes.
   */
  static fromConnection(error: unknown, where: string): RedisError {
    if (error instanceof RedisError) return error;
    if (error instanceof ErrorReply)
      return new RedisError(
        "reply",
        `Redis at ${where} refused the connection's set-up: ${error.message}`,
        error.message.split(" ", 1)[0] ?? "",
        { cause: error },
      );
    if (error instanceof ConnectionTimeoutError)
      return new RedisError("unavailable", `Redis at ${where} did not answer in time.`, null, {
        cause: error,
      });
    if (error instanceof SocketClosedUnexpectedlyError)
      return new RedisError("unavailable", `The connection to Redis at ${where} closed.`, null, {
        cause: error,
      });
    const code = (error as NodeJS.ErrnoException | null)?.code;
    // Node's certificate checks: SELF_SIGNED_CERT_IN_CHAIN, UNABLE_TO_VERIFY_LEAF_SIGNATURE,
    // CERT_HAS_EXPIRED, ERR_TLS_CERT_ALTNAME_INVALID, ...
    if (typeof code === "string" && /CERT|SIGNATURE|ISSUER/.test(code))
      return new RedisError(
        "unavailable",
        `Cannot reach Redis at ${where}: its TLS certificate was refused (${code}; a private CA is trusted through NODE_EXTRA_CA_CERTS).`,
        null,
        { cause: error },
      );
    const why = typeof code === "string" ? code : error instanceof Error ? error.name : "unknown error";
    return new RedisError("unavailable", `Cannot reach Redis at ${where}: ${why}.`, null, { cause: error });
  }
}
