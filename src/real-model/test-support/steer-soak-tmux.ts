import { shippedSparkBin, type TmuxSession, tmuxSession } from "../../cli/test-support/spark-binary.js";
import { type SoakServer, STEER_TEXT, type Trial } from "./steer-soak.js";

/**
 * The status bar (status-bar.ts) while nothing runs, and while a turn runs (`streaming 3.4s`): read
 * from its state, after the model's name, since its key hints give way when the line is full (the
 * context meter and the last turn's outcome fill a 120-column line).
 */
const IDLE = /^ (?:.* · )?\S+ · idle(?: · .*|\s.*)?$/m;
const RUNNING = /^ (?:.* · )?\S+ · [a-z][a-z ]* \d+\.\ds(?: · .*|\s.*)?$/m;

/** `spark` (the terminal UI) in a tmux session, in the soak server's workspace: it attaches to it. */
export interface TuiSoakSession {
  term: TmuxSession;
  close(): void;
}

export async function openTuiSession(
  serve: SoakServer,
  name: string,
  startMs: number,
): Promise<TuiSoakSession> {
  const term = tmuxSession(name);
  const command = [
    `cd ${serve.repo} &&`,
    `XDG_STATE_HOME=${serve.env.XDG_STATE_HOME}`,
    `SPARK_SESSIONS_DIR=${serve.env.SPARK_SESSIONS_DIR}`,
    `"${process.execPath}" "${shippedSparkBin}"`,
  ].join(" ");
  term.tmux(
    "new-session",
    "-d",
    "-s",
    name,
    "-x",
    "120",
    "-y",
    "40",
    "-e",
    "CI=false",
    "-e",
    "SPARK_HOME=",
    command,
  );
  try {
    await term.waitForScreen(IDLE, startMs);
  } catch (error) {
    term.kill();
    throw error;
  }
  return { term, close: () => term.kill() };
}

/**
 * One steer (a message and Enter while the reply streams) or interrupt (Esc) at `trial.moment` of a
 * turn typed into `spark`, checked on the screen: the steer is answered exactly once (shown as the
 * turn's steer, as the next turn's message when the turn had ended, or as a notice that it was not
 * sent), and after Esc the turn ends within the deadline (the status bar is idle again). `index`
 * makes this trial's steer text its own.
 */
export async function tuiTrial(
  trial: Trial,
  options: { random: () => number; deadlineMs: number },
  session: TuiSoakSession,
  index: number,
): Promise<void> {
  const { random, deadlineMs } = options;
  const { term } = session;
  const type = (text: string) => {
    term.tmux("send-keys", "-t", term.name, "-l", text);
    term.tmux("send-keys", "-t", term.name, "Enter");
  };
  const prompt = `Tell me a story. [${index}]`;
  const steer = `${STEER_TEXT} [${index}]`;
  try {
    type(prompt);
    await term.waitForScreen(new RegExp(`> ${escapeRegExp(prompt)}`), deadlineMs);
    // Esc before the turn has started would find nothing to stop.
    await term.waitForScreen(RUNNING, deadlineMs).catch(() => undefined);
    if (trial.moment !== "before_first_token") {
      // Some of the reply on screen (the screen is all a terminal gives to wait on), or its end.
      const chars = 1 + Math.floor(random() * 120);
      await term
        .waitForScreen(
          new RegExp(`> ${escapeRegExp(prompt)}[\\s\\S]*(${IDLE.source}|\\n[^\\n>]{${chars},})`),
          deadlineMs * 2,
        )
        .catch(() => undefined);
    }
    if (trial.action === "steer") {
      type(steer);
      await term.waitForScreen(answered(steer), deadlineMs).catch(() => undefined);
    }
    term.tmux("send-keys", "-t", term.name, "Escape");
    // A steer that started the next turn: Esc interrupts that one too.
    let screen = await term.waitForScreen(IDLE, deadlineMs).catch(async () => {
      term.tmux("send-keys", "-t", term.name, "Escape");
      return term.waitForScreen(IDLE, deadlineMs);
    });
    if (RUNNING.test(lastLines(screen))) throw new Error("the status bar still shows a running turn");
    if (trial.action === "steer") {
      screen = await term.waitForScreen(answered(steer), deadlineMs);
      const answers = (screen.match(new RegExp(answered(steer).source, "gm")) ?? []).length;
      if (answers !== 1) throw new Error(`the steer was answered ${answers} times on screen`);
    }
  } catch (error) {
    throw new Error(
      `tmux ${trial.action} ${trial.moment}: ${(error as Error).message}\nscreen:\n${lastLines(term.screen(), 30)}`,
    );
  }
}

/** The steer as the turn's steer, as the next turn's message, or in a notice that it was not sent. */
function answered(steer: string): RegExp {
  const text = escapeRegExp(steer);
  return new RegExp(`> (?:steer: )?${text}\\s*$|Not sent to the model \\([^)]*\\): "${text}"`, "m");
}

function lastLines(screen: string, count = 3): string {
  return screen.trimEnd().split("\n").slice(-count).join("\n");
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
