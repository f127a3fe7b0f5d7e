import type { IncomingMessage, ServerResponse } from "node:http";
import type { Engine } from "../../engine/engine.js";
import type { ServerContext } from "../server-context.js";
import type { Admission } from "./scheduler.js";

/**
 * Admission for an HTTP request: refused at once (the error becomes `429` with `Retry-After`), or
 * waits for its turn before any byte of the response is sent, leaving the queue if the client
 * goes away. Release the result when the response ends (`using admission = await …`).
 */
export async function admitHttp(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  engine: Engine,
): Promise<Admission> {
  const controller = new AbortController();
  const onClose = () => controller.abort();
  res.once("close", onClose);
  try {
    const admission = ctx.scheduler.enter({
      engine,
      key: ctx.keyOf(req),
      signal: controller.signal,
      record: ctx.log.recordOf(req),
    });
    await admission.ready;
    return admission;
  } finally {
    res.off("close", onClose);
  }
}
