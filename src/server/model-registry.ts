import {
  type DraftOptions,
  type DraftRequest,
  type DraftResult,
  type Engine,
  type EngineEvent,
  type EngineInfo,
  type GenerateOptions,
  type GenerateRequest,
  IGNORED_DRAFT,
} from "../engine/engine.js";
import { SparkError } from "../protocol/errors.js";

type Entry =
  | { status: "loading"; promise: Promise<Engine>; waiting: Engine; progress: number | null }
  | { status: "ready"; engine: Engine }
  | { status: "failed"; error: SparkError };

export interface ModelStatus {
  id: string;
  status: Entry["status"];
  /** While loading, how far (0 to 1) when the loader reports it. */
  progress?: number;
  error?: string;
}

export interface ModelRegistryOptions {
  /**
   * How long a request for a model that is still loading waits for it before failing with
   * `model_not_loaded` (503). Default: 600000 (10 minutes: a first start may download the model).
   */
  loadWaitMs?: number;
}

/** Ten minutes: a first start may be downloading the model. */
export const DEFAULT_LOAD_WAIT_MS = 600_000;

/**
 * The models a server offers. Loading happens in the background so the server answers at once;
 * a request for a model still loading waits for it (bounded by `loadWaitMs`, and by the request's
 * own cancellation), then runs.
 */
export class ModelRegistry implements AsyncDisposable {
  private readonly entries = new Map<string, Entry>();
  private defaultId: string | undefined;
  private readonly loadWaitMs: number;

  constructor(options: ModelRegistryOptions = {}) {
    this.loadWaitMs = options.loadWaitMs ?? DEFAULT_LOAD_WAIT_MS;
  }

  /**
   * Adds a model under `id`; the first added is the default for requests that name none. A
   * promise is a model still loading: `info` describes it meanwhile (default: a llama engine of
   * unknown context size, reported as 0).
   */
  add(id: string, engine: Engine | Promise<Engine>, info: Partial<EngineInfo> = {}): void {
    this.defaultId ??= id;
    if (!(engine instanceof Promise)) {
      this.entries.set(id, { status: "ready", engine });
      return;
    }
    const promise = engine;
    const waiting = new WaitingEngine(
      { engine: "llama", contextSize: 0, ...info, id },
      promise,
      this.loadWaitMs,
    );
    this.entries.set(id, { status: "loading", promise, waiting, progress: null });
    promise.then(
      (ready) => {
        if (this.entries.get(id)?.status === "loading")
          this.entries.set(id, { status: "ready", engine: ready });
      },
      (error: unknown) => {
        if (this.entries.get(id)?.status === "loading")
          this.entries.set(id, { status: "failed", error: SparkError.from(error) });
      },
    );
  }

  /** Records how far a loading model is (0 to 1), for `list()` (and so `/healthz`). */
  setProgress(id: string, fraction: number): void {
    const entry = this.entries.get(id);
    if (entry?.status === "loading") entry.progress = Math.min(1, Math.max(0, fraction));
  }

  /**
   * The engine for `model` (or the default), or a SparkError saying why there is none. A server
   * with one model answers every name with it (as llama-server does; the response reports the
   * model's own id); with several, a name none of them has is `model_not_found` (404), listing
   * them. For a model still loading, an engine whose requests wait for the load.
   */
  resolve(model: string | undefined): Engine {
    const id = model && (this.entries.has(model) || this.entries.size !== 1) ? model : this.defaultId;
    const entry = id === undefined ? undefined : this.entries.get(id);
    if (!entry || id === undefined) {
      const known = [...this.entries.keys()].map((known) => `'${known}'`).join(", ") || "none";
      throw new SparkError(
        "model_not_found",
        `The model '${model}' is not served here; it serves ${known}.`,
        {
          param: "model",
        },
      );
    }
    if (entry.status === "ready") return entry.engine;
    if (entry.status === "loading") return entry.waiting;
    throw new SparkError("model_not_loaded", `The model '${id}' failed to load: ${entry.error.message}`, {
      param: "model",
    });
  }

  /** Resolves once every model has loaded or failed. */
  async settled(): Promise<void> {
    await Promise.allSettled(
      [...this.entries.values()].map((e) => (e.status === "loading" ? e.promise : null)),
    );
  }

  list(): ModelStatus[] {
    return [...this.entries].map(([id, entry]) => ({
      id,
      status: entry.status,
      ...(entry.status === "loading" && entry.progress !== null ? { progress: entry.progress } : {}),
      ...(entry.status === "failed" ? { error: entry.error.message } : {}),
    }));
  }

  async dispose(): Promise<void> {
    const engines = await Promise.allSettled(
      [...this.entries.values()].map((e) =>
        e.status === "ready" ? e.engine : e.status === "loading" ? e.promise : null,
      ),
    );
    this.entries.clear();
    for (const result of engines) if (result.status === "fulfilled") await result.value?.dispose();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }
}

/**
 * A model still loading, as the server's request paths see it: each generation waits for the load
 * (at most `waitMs`; cancelling the request stops the wait), then runs on the loaded engine.
 */
class WaitingEngine implements Engine {
  private loaded: Engine | null = null;

  constructor(
    readonly info: EngineInfo,
    private readonly loading: Promise<Engine>,
    private readonly waitMs: number,
  ) {
    // A failed load is reported by every request that waits on it (see ready()).
    loading.then(
      (engine) => {
        this.loaded = engine;
      },
      () => {},
    );
  }

  /** A draft never waits for the load: typing ahead of a model that is not there evaluates nothing. */
  draft(request: DraftRequest, options?: DraftOptions): Promise<DraftResult> {
    return this.loaded ? this.loaded.draft(request, options) : Promise.resolve(IGNORED_DRAFT);
  }

  async *generate(request: GenerateRequest, options: GenerateOptions = {}): AsyncGenerator<EngineEvent> {
    const engine = await this.ready(options.signal);
    if (!engine) {
      // Cancelled while waiting: nothing was evaluated.
      yield {
        type: "done",
        result: {
          stopReason: "cancelled",
          usage: {
            inputTokens: 0,
            cachedInputTokens: 0,
            outputTokens: 0,
            acceptedPredictionTokens: 0,
            rejectedPredictionTokens: 0,
          },
          timing: { promptMs: 0, firstTokenMs: 0, decodeMs: 0 },
        },
      };
      return;
    }
    yield* engine.generate(request, options);
  }

  /** The loaded engine; null when `signal` aborts first; throws on a failed load or after the bound. */
  private async ready(signal: AbortSignal | undefined): Promise<Engine | null> {
    if (signal?.aborted) return null;
    let timer: NodeJS.Timeout | undefined;
    let onAbort = () => {};
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new SparkError(
              "model_not_loaded",
              `The model '${this.info.id}' is still loading after ${Math.round(this.waitMs / 1000)} s; try again shortly.`,
              { param: "model" },
            ),
          ),
        this.waitMs,
      );
    });
    const aborted = new Promise<null>((resolve) => {
      onAbort = () => resolve(null);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
    try {
      return await Promise.race([
        this.loading.catch((error: unknown) => {
          const cause = SparkError.from(error);
          throw new SparkError(
            "model_not_loaded",
            `The model '${this.info.id}' failed to load: ${cause.message}`,
            {
              param: "model",
            },
          );
        }),
        timedOut,
        aborted,
      ]);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
  }

  async dispose(): Promise<void> {
    // The registry owns the loading engine and disposes it.
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }
}
