import { Writable } from "node:stream";

/** The exit status of a process whose reader went away: 128 + SIGPIPE, as a shell reports `yes | head -1`. */
export const EXIT_OUTPUT_CLOSED = 141;

/**
 * Watches a command's output streams for a reader that went away (`spark exec ... | head -1`: the
 * next write fails with EPIPE). Without a listener that failure is an uncaught `error` event and a
 * stack trace; with this, `signal` aborts so the caller stops its work, and `stderr` (a stand-in to
 * write diagnostics to) goes quiet: nobody asked for a note about the pipe.
 */
export class OutputWatch implements Disposable {
  private readonly controller = new AbortController();
  private readonly onError = () => this.controller.abort();
  /** Forwards to the real stderr until an output closes, then drops writes. */
  readonly stderr: Writable;

  constructor(private readonly streams: { stdout: NodeJS.WriteStream; stderr: NodeJS.WriteStream }) {
    // Any write error means the output is gone (EPIPE, or EIO from a closed terminal).
    streams.stdout.on("error", this.onError);
    streams.stderr.on("error", this.onError);
    this.stderr = new Writable({
      write: (chunk, _encoding, callback) => {
        if (!this.closed) streams.stderr.write(chunk);
        callback();
      },
    });
  }

  /** Aborts when stdout or stderr fails. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get closed(): boolean {
    return this.controller.signal.aborted;
  }

  /** Stops watching. The listeners stay if an output closed: later writes may fail again. */
  [Symbol.dispose](): void {
    if (this.closed) return;
    this.streams.stdout.off("error", this.onError);
    this.streams.stderr.off("error", this.onError);
  }
}

/**
 * Writes help or version text to a reader that may stop early (`spark serve --help | head`): the
 * write then fails with EPIPE, which ends the writing quietly instead of the process with a stack
 * trace.
 */
export function writeToReader(stream: NodeJS.WriteStream, text: string): void {
  if (stream.listenerCount("error") === 0) stream.on("error", () => {});
  stream.write(text);
}
