import { promptProgressLabel } from "../../client-core/prompt-progress-label.js";

/** A yes/no question the person answers before the start goes on (project trust). */
export interface StartupQuestion {
  title: string;
  details: string;
  /** Asked after the details, e.g. "Trust this project?". */
  question: string;
  /** Shown in the conversation once answered. */
  answered: { yes: string; no: string };
}

/** Where the start of an interactive session is, while the view already takes input. */
export type StartupState =
  | { phase: "starting" }
  | ({ phase: "asking" } & StartupQuestion)
  | { phase: "downloading" | "loading"; fraction: number }
  /**
   * The agent prompt is being evaluated: `evaluated` of `total` tokens, once the engine has said
   * (0 of 0 until then, and when it had the prompt cached).
   */
  | { phase: "warming"; evaluated?: number; total?: number }
  | { phase: "ready" }
  | { phase: "failed"; message: string };

type Listener = () => void;

/**
 * The start-up of a session as the terminal UI shows it: the code starting the runtime reports its
 * progress here and asks its questions through {@link ask}; the view renders {@link state} and
 * answers with {@link answer}. The view never waits on it: input is taken at every phase.
 */
export class StartupStatus {
  private current: StartupState = { phase: "starting" };
  private readonly listeners = new Set<Listener>();
  private pendingAnswer: ((yes: boolean) => void) | null = null;

  get state(): StartupState {
    return this.current;
  }

  /** Whether the session can take turns (the runtime has started and the model is warm). */
  get ready(): boolean {
    return this.current.phase === "ready";
  }

  /** For useSyncExternalStore: returns the unsubscribe function. */
  readonly subscribe = (listener: Listener): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  readonly getSnapshot = (): StartupState => this.current;

  set(state: Exclude<StartupState, { phase: "asking" }>): void {
    // Progress reported after the end (a late callback) must not reopen the start.
    if (this.current.phase === "ready" || this.current.phase === "failed") return;
    this.current = state;
    for (const listener of this.listeners) listener();
  }

  /**
   * Shows a yes/no question and resolves with the answer: true only for an explicit yes. Only one
   * question is open at a time; the start is paused meanwhile (the caller awaits it).
   */
  ask(question: StartupQuestion): Promise<boolean> {
    if (this.pendingAnswer) throw new Error("A start-up question is already open.");
    const previous = this.current;
    return new Promise<boolean>((resolve) => {
      this.pendingAnswer = (yes) => {
        this.pendingAnswer = null;
        this.current = previous;
        for (const listener of this.listeners) listener();
        resolve(yes);
      };
      this.current = { phase: "asking", ...question };
      for (const listener of this.listeners) listener();
    });
  }

  /** Answers the open question; false when none is open. */
  answer(yes: boolean): boolean {
    if (!this.pendingAnswer) return false;
    this.pendingAnswer(yes);
    return true;
  }
}

/** The status bar's words for a start-up state; null once ready. */
export function startupLabel(state: StartupState): string | null {
  switch (state.phase) {
    case "starting":
      return "starting…";
    case "asking":
      return "waiting for your answer";
    case "downloading":
      return `downloading model ${Math.floor(state.fraction * 100)}%…`;
    case "loading":
      return `loading model ${Math.floor(state.fraction * 100)}%…`;
    case "warming":
      return `${promptProgressLabel({ evaluated: state.evaluated ?? 0, total: state.total ?? 0 })}…`;
    case "failed":
      return "failed to start";
    case "ready":
      return null;
    default: {
      const unknown: never = state;
      return unknown;
    }
  }
}
