import type { Engine, EngineEvent, EngineInfo, GenerateOptions, GenerateRequest } from "./engine.js";

/**
 * An engine loaded on its first request (a second local model that may never be used). The first
 * request waits for the load; a failed load fails that request and is retried by the next.
 */
export class LazyEngine implements Engine {
  readonly info: EngineInfo;
  private loading: Promise<Engine> | null = null;

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

  private engine(): Promise<Engine> {
    this.loading ??= this.load().then(
      (engine) => {
        this.info.contextSize = engine.info.contextSize;
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
    if (loading) await (await loading.catch(() => null))?.dispose();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }
}
