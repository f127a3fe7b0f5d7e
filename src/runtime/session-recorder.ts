import { Transcript, type TranscriptOptions } from "../agent/transcript.js";
import type { ThreadEvent, ThreadInfo } from "../protocol/agent.js";

/** What a recorder tells the person about its transcript: whole sentences, for a notice. */
export type RecorderNotice = (message: string) => void;

/**
 * A thread's transcript, written from its first user message on: a session that was opened and
 * never used leaves no file behind (and so is never listed). A resumed session records into its
 * existing transcript at once.
 *
 * A transcript that cannot be written (disk full, permissions) is said once through `notify`; the
 * session goes on, every record is kept and written with the next one, and `notify` says so
 * again once it is all on disk.
 */
export class SessionRecorder {
  private transcript: Transcript | null;

  private constructor(
    private readonly thread: { readonly info: ThreadInfo },
    private readonly dir: string,
    existing: Transcript | null,
    private readonly options: TranscriptOptions,
  ) {
    this.transcript = existing;
  }

  /** A new session's recorder: nothing is written until its first user message. */
  static create(thread: { readonly info: ThreadInfo }, dir: string, notify: RecorderNotice): SessionRecorder {
    return new SessionRecorder(
      thread,
      dir,
      null,
      SessionRecorder.reporting(notify, () => dir),
    );
  }

  /** A resumed session's recorder, appending to its transcript (made private: 0600 in a 0700 folder). */
  static async resume(
    thread: { readonly info: ThreadInfo },
    file: string,
    notify: RecorderNotice,
  ): Promise<SessionRecorder> {
    const options = SessionRecorder.reporting(notify, () => file);
    return new SessionRecorder(thread, "", await Transcript.open(file, options), options);
  }

  private static reporting(notify: RecorderNotice, where: () => string): TranscriptOptions {
    return {
      onError: (error) =>
        notify(
          `The session could not be saved (${where()}): ${error.message}. It goes on; what was not saved is kept and written with the next item.`,
        ),
      onRecovered: () => notify(`The session is saved again (${where()}).`),
    };
  }

  /** The transcript file, or null while the session has had no user message. */
  get file(): string | null {
    return this.transcript?.file ?? null;
  }

  /** Why records wait to be written; null when everything is on disk. */
  get error(): Error | null {
    return this.transcript?.error ?? null;
  }

  /** Records what a thread event makes permanent (see {@link Transcript.observe}). */
  observe(event: ThreadEvent): void {
    if (!this.transcript && isUserMessage(event)) {
      this.transcript = Transcript.start(this.dir, { ...this.thread.info }, this.options);
    }
    this.transcript?.observe(event);
  }

  /** Saves the thread's current info (title, times), once the session is recorded at all. */
  saveThread(info: ThreadInfo): void {
    this.transcript?.saveThread({ ...info });
  }

  /**
   * Resolves when every record so far is on disk, or when a retry failed again: that failure was
   * told through `notify`, and the records stay queued (see {@link error}).
   */
  async flush(): Promise<void> {
    await this.transcript?.flush().catch(() => {});
  }
}

function isUserMessage(event: ThreadEvent): boolean {
  return event.type === "item.completed" && event.item.type === "user_message";
}
