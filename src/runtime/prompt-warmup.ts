/** How far the agent prompt's evaluation is: tokens evaluated of those to evaluate. */
export interface PromptProgress {
  evaluated: number;
  /** 0 when nothing had to be evaluated (the state was cached, or the server does not say). */
  total: number;
  /** The evaluation has ended (also when it failed: a thread's own pre-warm then says why). */
  done: boolean;
}

type Listener = (progress: PromptProgress) => void;

/**
 * The evaluation of the agent's prompt (system prompt, tools, AGENTS.md) started when the model is
 * loaded, before any thread needs it: threads wait for {@link done} before their own pre-warm, which
 * then finds the whole prompt cached. Progress never goes back and ends with `done`; after a
 * complete evaluation with `evaluated === total`.
 */
export class PromptWarmup {
  /** Settles when the evaluation has ended; never rejects. */
  readonly done: Promise<void>;
  private current: PromptProgress = { evaluated: 0, total: 0, done: false };
  private readonly listeners = new Set<Listener>();

  constructor(run: (onProgress: (evaluated: number, total: number) => void) => Promise<void>) {
    this.done = run((evaluated, total) => this.report(evaluated, total)).then(
      () => this.update({ evaluated: this.current.total, total: this.current.total, done: true }),
      () => this.update({ ...this.current, done: true }),
    );
  }

  get progress(): PromptProgress {
    return this.current;
  }

  /** Hears each change of {@link progress}; returns the unsubscribe function. */
  on(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private report(evaluated: number, total: number): void {
    if (this.current.done || evaluated <= this.current.evaluated || total < evaluated) return;
    this.update({ evaluated, total, done: false });
  }

  private update(progress: PromptProgress): void {
    this.current = progress;
    for (const listener of this.listeners) listener(progress);
  }
}
