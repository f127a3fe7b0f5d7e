import { randomBytes } from "node:crypto";

/** Opaque ids in the OpenAI style (`resp_…`, `msg_…`), unguessable so ids cannot be probed. */
export function newId(
  prefix: "resp" | "msg" | "rs" | "fc" | "call" | "steer" | "chatcmpl" | "draft",
): string {
  return `${prefix}_${randomBytes(12).toString("hex")}`;
}
