import type { Engine } from "../engine/engine.js";
import { SparkError } from "../protocol/errors.js";

type Entry =
  | { status: "loading"; promise: Promise<Engine> }
  | { status: "ready"; engine: Engine }
  | { status: "failed"; error: SparkError };

export interface ModelStatus {
  id: string;
  status: Entry["status"];
  error?: string;
}

/**
 * The models a server offers. Loading happens in the background so the server answers at once;
 * until a model is ready, requests for it get `model_not_loaded` (503) rather than waiting.
 */
export class ModelRegistry implements AsyncDisposable {
  private readonly entries = new Map<string, Entry>();
  private defaultId: string | undefined;

  /** Adds a model under `id`; the first added is the default for requests that name none. */
  add(id: string, engine: Engine | Promise<Engine>): void {
    this.defaultId ??= id;
    if (!(engine instanceof Promise)) {
      this.entries.set(id, { status: "ready", engine });
      return;
    }
    const promise = engine;
    this.entries.set(id, { status: "loading", promise });
    promise.then(
      (ready) => this.entries.set(id, { status: "ready", engine: ready }),
      (error: unknown) => this.entries.set(id, { status: "failed", error: SparkError.from(error) }),
    );
  }

  /** The engine for `model` (or the default), or a SparkError saying why there is none. */
  resolve(model: string | undefined): Engine {
    const id = model || this.defaultId;
    const entry = id === undefined ? undefined : this.entries.get(id);
    if (!entry || id === undefined) {
      const known = [...this.entries.keys()].join(", ") || "none";
      throw new SparkError(
        "model_not_found",
        `The model '${model}' is not served here (serving: ${known}).`,
        {
          param: "model",
        },
      );
    }
    if (entry.status === "ready") return entry.engine;
    if (entry.status === "loading") {
      throw new SparkError("model_not_loaded", `The model '${id}' is still loading; try again shortly.`, {
        param: "model",
      });
    }
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
