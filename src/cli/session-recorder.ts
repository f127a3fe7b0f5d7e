import { Transcript } from "../agent/transcript.js";
import type { ThreadEvent, ThreadInfo } from "../protocol/agent.js";

/**
 * A thread's transcript, written from its first user message on: a session that was opened and
 * never used leaves no file behind (and so is never listed). A resumed session records into its
 * existing transcript at once.
 */
export class SessionRecorder {
  private transcript: Transcript | null;
  private opening: Promise<void> | null = null;
  /** The transcript could not be created: the session goes unrecorded (said once, via onError). */
  private failed = false;
  /** What arrived while the transcript was being created, applied in order once it is. */
  private readonly pending: ((transcript: Transcript) => void)[] = [];

  private constructor(
    private readonly thread: { readonly info: ThreadInfo },
    private readonly dir: string,
    existing: Transcript | null,
    /** Told when the transcript cannot be created (the session then goes unrecorded). */
    private readonly onError: (error: Error) => void,
  ) {
    this.transcript = existing;
  }

  /** A new session's recorder: nothing is written until its first user message. */
  static create(
    thread: { readonly info: ThreadInfo },
    dir: string,
    onError: (error: Error) => void,
  ): SessionRecorder {
    return new SessionRecorder(thread, dir, null, onError);
  }

  /** A resumed session's recorder, appending to its transcript. */
  static resume(
    thread: { readonly info: ThreadInfo },
    transcript: Transcript,
    onError: (error: Error) => void,
  ): SessionRecorder {
    return new SessionRecorder(thread, "", transcript, onError);
  }

  /** The transcript file, or null while the session has had no user message. */
  get file(): string | null {
    return this.transcript?.file ?? null;
  }

  /** Records what a thread event makes permanent (see {@link Transcript.observe}). */
  observe(event: ThreadEvent): void {
    if (!this.transcript && !this.opening && !this.failed && isUserMessage(event)) this.open();
    this.whenOpen((transcript) => transcript.observe(event));
  }

  /** Saves the thread's current info (title, times), once the session is recorded at all. */
  saveThread(info: ThreadInfo): void {
    const copy = { ...info };
    this.whenOpen((transcript) => transcript.saveThread(copy));
  }

  /** Resolves when every record so far is on disk. */
  async flush(): Promise<void> {
    await this.opening;
    await this.transcript?.flush();
  }

  private whenOpen(record: (transcript: Transcript) => void): void {
    if (this.transcript) record(this.transcript);
    else if (this.opening && !this.failed) this.pending.push(record);
  }

  private open(): void {
    this.opening = Transcript.create(this.dir, { ...this.thread.info }).then(
      (transcript) => {
        this.transcript = transcript;
        for (const record of this.pending.splice(0)) record(transcript);
      },
      (error: Error) => {
        this.failed = true;
        this.pending.length = 0;
        this.onError(error);
      },
    );
  }
}

function isUserMessage(event: ThreadEvent): boolean {
  return event.type === "item.completed" && event.item.type === "user_message";
}
