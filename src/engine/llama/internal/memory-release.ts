import v8 from "node:v8";
import vm from "node:vm";
import type { LlamaContext, LlamaModel } from "node-llama-cpp";

/**
 * Drops the JavaScript copy of the tokenizer's texts that node-llama-cpp keeps with the model's
 * GGUF metadata: on Qwen2.5, 151,936 token texts and 151,387 merges, 11 MiB of the heap. llama.cpp
 * has its own copy; node-llama-cpp reads only the token count, which is kept (as an array of that
 * length with no texts in it).
 */
export function releaseTokenizerTexts(model: LlamaModel): void {
  const ggml = model.fileInfo.metadata.tokenizer?.ggml as Record<string, unknown> | undefined;
  if (!ggml) return;
  if (Array.isArray(ggml.tokens)) ggml.tokens = new Array<undefined>(ggml.tokens.length);
  delete ggml.merges;
  delete ggml.scores;
  delete ggml.token_type;
}

/**
 * Gives back the memory a process holds but no longer uses, in two steps whose order matters.
 * V8 first, collecting as it does under memory pressure: it shrinks a young generation grown while
 * the model loaded (64 MiB) and frees the buffers of files read meanwhile (37 MiB on the default
 * model's shape). Then glibc, whose per-thread arenas keep the pages of freed allocations (those
 * buffers, and 65 MiB left by loading a 151,936-token vocabulary): `malloc_trim` returns them. A
 * no-op step off glibc and on the prebuilt binaries, which lack it. Costs 60-90 ms of the main
 * thread: run it when nothing waits on the engine (see {@link IdleMemoryRelease}).
 */
export function releaseUnusedMemory(context: LlamaContext): void {
  collectGarbage();
  (context as unknown as ReleasingContext)._sparkReleaseFreeMemory?.();
}

interface ReleasingContext {
  _sparkReleaseFreeMemory?(): void;
}

type Collector = (options: { type: "major"; execution: "sync"; flavor: "last-resort" }) => void;
let collector: Collector | undefined;

function collectGarbage(): void {
  if (!collector) {
    // Node gives V8's collector only to contexts made while --expose-gc is on.
    v8.setFlagsFromString("--expose-gc");
    collector = vm.runInNewContext("gc") as Collector;
    v8.setFlagsFromString("--no-expose-gc");
  }
  collector({ type: "major", execution: "sync", flavor: "last-resort" });
}

/**
 * Runs a release once the engine has been idle for `afterMs`: a request that starts meanwhile
 * puts it off until the next idle, so no reply streams while the main thread collects.
 */
export class IdleMemoryRelease implements Disposable {
  private timer: NodeJS.Timeout | undefined;
  private readonly waiters: (() => void)[] = [];

  constructor(
    private readonly release: () => void,
    private readonly afterMs: number,
  ) {}

  busy(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  idle(): void {
    this.busy();
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.release();
      for (const resolve of this.waiters.splice(0)) resolve();
    }, this.afterMs).unref();
  }

  /** Resolves once the next release has run. */
  next(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  [Symbol.dispose](): void {
    this.busy();
  }
}
