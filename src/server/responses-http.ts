import type { IncomingMessage, ServerResponse } from "node:http";
import { SparkError } from "../protocol/errors.js";
import type { ResponseStreamEvent } from "../protocol/responses.js";
import { responseCreateBodySchema } from "../protocol/responses-request.js";
import { validate } from "../protocol/validate.js";
import { admitHttp } from "./admission/admit-http.js";
import { DeltaCoalescer } from "./internal/delta-coalescer.js";
import { SseWriter, sendError, sendJson } from "./internal/http-io.js";
import { readJsonBody } from "./internal/json-body.js";
import { snapshot } from "./internal/snapshot.js";
import { prepareResponse } from "./prepare-response.js";
import { type PreparedResponse, ResponseRun } from "./response-run.js";
import { keepResponse, type ServerContext, withSequence } from "./server-context.js";

function isLast(event: ResponseStreamEvent): boolean {
  return (
    event.type === "response.completed" ||
    event.type === "response.incomplete" ||
    event.type === "response.failed"
  );
}

/** `POST /v1/responses`: JSON, or SSE when `stream: true`. */
export async function handleResponsesPost(
  req: IncomingMessage,
  res: ServerResponse,
  ctx: ServerContext,
): Promise<void> {
  const body = validate(responseCreateBodySchema, await readJsonBody(req, ctx));
  const engine = ctx.models.resolve(body.model);
  const previousId = body.previous_response_id ?? undefined;
  const previous = previousId ? ctx.running.get(previousId) : undefined;
  if (previous) await previous;
  const parent = previousId ? await ctx.store.get(previousId) : undefined;
  const prepared = prepareResponse(body, {
    engine,
    lookup: () => parent,
    ranHere: (id) => !ctx.store.shared || ctx.ranHere.has(id),
    generate: body.generate !== false,
  });
  ctx.log.recordOf(req)?.set({ response_id: prepared.id });
  const responding = (async () => {
    using admission = await admitHttp(ctx, req, res, engine);
    await respond(res, ctx, { ...prepared, engine: admission.engine }, body.stream === true);
  })();
  ctx.running.set(
    prepared.id,
    responding.catch(() => {}),
  );
  try {
    await responding;
  } finally {
    ctx.running.delete(prepared.id);
  }
}

async function respond(
  res: ServerResponse,
  ctx: ServerContext,
  prepared: PreparedResponse,
  stream: boolean,
): Promise<void> {
  if (!stream) {
    const run = new ResponseRun(prepared, () => {});
    res.on("close", () => {
      if (!res.writableFinished) run.abort("cancelled");
    });
    const outcome = await run.run();
    if (outcome.stored) await keepResponse(ctx, prepared.settings, outcome.stored);
    if (outcome.response.status === "failed" && outcome.response.error) {
      const { error } = outcome.response;
      // Shed load (an upstream's 429 or 503 with Retry-After) keeps its status and says when to retry.
      const status = error.type === "rate_limit_error" ? 429 : error.type === "server_error" ? 500 : 400;
      const retry = error.retry_after_seconds;
      sendJson(res, status, { error }, retry === undefined ? {} : { "retry-after": String(retry) });
      return;
    }
    sendJson(res, 200, outcome.response);
    return;
  }

  const sse = new SseWriter(res);
  let sequence = 0;
  const events = new DeltaCoalescer({
    send: (event) => sse.send(withSequence(event, sequence++), event.type),
    isBusy: () => res.writableNeedDrain,
    whenDrained: (callback) => res.once("drain", callback),
  });
  // The last event goes out once the response is stored, so a client that continues from it at
  // once (on any server sharing the store) finds it.
  let last: ResponseStreamEvent | null = null;
  const run = new ResponseRun(prepared, (event) => {
    if (isLast(event)) last = event;
    else events.push(event);
  });
  res.on("close", () => run.abort("cancelled"));
  try {
    const outcome = await run.run();
    try {
      if (outcome.stored) await keepResponse(ctx, prepared.settings, outcome.stored);
    } catch (error) {
      const response = snapshot(outcome.response);
      response.status = "failed";
      response.error = SparkError.from(error).toWire();
      last = { type: "response.failed", response };
    }
    if (last) events.push(last);
  } catch (error) {
    sendError(res, error);
  } finally {
    sse.end();
  }
}
