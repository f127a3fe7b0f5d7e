import type { IncomingMessage, ServerResponse } from "node:http";
import { responseCreateBodySchema } from "../protocol/responses-request.js";
import { validate } from "../protocol/validate.js";
import { admitHttp } from "./admission/admit-http.js";
import { DeltaCoalescer } from "./internal/delta-coalescer.js";
import { SseWriter, sendError, sendJson } from "./internal/http-io.js";
import { readJsonBody } from "./internal/json-body.js";
import { prepareResponse } from "./prepare-response.js";
import { type PreparedResponse, ResponseRun } from "./response-run.js";
import { type ServerContext, withSequence } from "./server-context.js";

/** `POST /v1/responses`: JSON, or SSE when `stream: true`. */
export async function handleResponsesPost(
  req: IncomingMessage,
  res: ServerResponse,
  ctx: ServerContext,
): Promise<void> {
  const body = validate(responseCreateBodySchema, await readJsonBody(req, ctx));
  const engine = ctx.models.resolve(body.model);
  const previous = body.previous_response_id ? ctx.running.get(body.previous_response_id) : undefined;
  if (previous) await previous;
  const prepared = prepareResponse(body, {
    engine,
    lookup: (id) => ctx.store.get(id),
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
    if (outcome.stored && prepared.settings.store) ctx.store.put(outcome.stored);
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
  const run = new ResponseRun(prepared, (event) => events.push(event));
  res.on("close", () => run.abort("cancelled"));
  try {
    const outcome = await run.run();
    if (outcome.stored && prepared.settings.store) ctx.store.put(outcome.stored);
  } catch (error) {
    sendError(res, error);
  } finally {
    sse.end();
  }
}
