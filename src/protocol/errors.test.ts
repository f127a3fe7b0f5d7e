import { describe, expect, it } from "vitest";
import { ToolError } from "../agent/tools/tool-error.js";
import { ClientError } from "../client/client-error.js";
import { SseEventTooLarge } from "../client/server-sent-events.js";
import { CodedError, SparkError } from "./errors.js";

describe("one error base", () => {
  const cause = new Error("underneath");
  const errors: [CodedError, string, string][] = [
    [new SparkError("not_found", "no such thread", { cause }), "not_found", "SparkError"],
    [new ToolError("path_protected", "not there", { cause }), "path_protected", "ToolError"],
    [new ClientError("connection_lost", "socket closed", { cause }), "connection_lost", "ClientError"],
  ];

  it.each(errors)("%s carries its literal code, its name and its cause", (error, code, name) => {
    expect(error).toBeInstanceOf(CodedError);
    expect(error).toBeInstanceOf(Error);
    expect(error.code).toBe(code);
    expect(error.name).toBe(name);
    expect(error.cause).toBe(cause);
  });

  it("an error without a cause has none", () => {
    const error = new SseEventTooLarge(10);
    expect(error.code).toBe("event_too_large");
    expect("cause" in error).toBe(false);
  });

  it("SparkError.from keeps a SparkError and makes any other error a server_error with its message", () => {
    const spark = new SparkError("limit_reached", "too many");
    expect(SparkError.from(spark)).toBe(spark);
    const tool = new ToolError("denied", "the person said no");
    const wrapped = SparkError.from(tool);
    expect(wrapped.toWire()).toEqual({
      type: "server_error",
      code: "server_error",
      message: "the person said no",
      param: null,
    });
    expect(wrapped.cause).toBe(tool);
    expect(SparkError.from("a string").toWire().message).toBe("a string");
  });
});
