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
} from "./engine.js";

/**
 * An engine loaded on its first request (a second local model that may never be used). The first
 * request waits for the load; a failed load fails that request and is retried by the next.
 */
export class LazyEngine implements Engine {
  readonly info: EngineInfo;
  private loading: Promise<Engine> | null = null;
  private loaded: Engine | null = null;

  constructor(
    info: EngineInfo,
    private readonly load: () => Promise<Engine>,
  ) {
    this.info = { ...info };
  }

  async *generate(request: GenerateRequest, options?: GenerateOptions): AsyncGenerator<EngineEvent> {
    const engine = await this.engine();
    yield* engine.generate(request, options);
  }

  /** A draft never loads the model: it is ignored until a request has. */
  draft(request: DraftRequest, options?: DraftOptions): Promise<DraftResult> {
    return this.loaded ? this.loaded.draft(request, options) : Promise.resolve(IGNORED_DRAFT);
  }

  private engine(): Promise<Engine> {
    this.loading ??= this.load().then(
      (engine) => {
        this.info.contextSize = engine.info.contextSize;
        this.loaded = engine;
        return engine;
      },
      (error: unknown) => {
        this.loading = null;
        throw error;
      },
    );
    return this.loading;
  }

  async dispose(): Promise<void> {
    const loading = this.loading;
    this.loading = null;
    this.loaded = null;
    if (loading) await (await loading.catch(() => null))?.dispose();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }
}
