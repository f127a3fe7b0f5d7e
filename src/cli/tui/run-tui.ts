import { type Instance, type RenderOptions, render } from "ink";
import React from "react";
import type { TerminalThread } from "../terminal-thread.js";
import type { ConversationStoreOptions } from "./conversation-store.js";
import { TuiApp } from "./tui-app.js";
import type { TuiOptions } from "./tui-options.js";
import { TuiSession } from "./tui-session.js";

export type { TuiOptions } from "./tui-options.js";

/** Frames per second at most, unless the options say otherwise. */
const DEFAULT_MAX_FPS = 30;

/** Renders until the user quits (Ctrl+C twice, or Ctrl+D on an empty prompt, or /exit); resolves then. */
export async function runTui(options: TuiOptions): Promise<TuiExit> {
  return mountTui(options).exited;
}

/** How the view ended: the thread it showed last (null: none had started, or Ink failed). */
export interface TuiExit {
  thread: TerminalThread | null;
}

export interface MountTuiOptions {
  /** Ink render options (tests pass `debug: true`, which writes each whole frame). */
  ink?: Partial<RenderOptions>;
  store?: ConversationStoreOptions;
}

export interface MountedTui {
  instance: Instance;
  /** Resolves once the person has quit and Ink has restored the terminal. */
  exited: Promise<TuiExit>;
}

/** {@link runTui} without the wait: mounts the view and returns at once. */
export function mountTui(options: TuiOptions, mount: MountTuiOptions = {}): MountedTui {
  const stdout = options.stdout ?? process.stdout;
  const stdin = options.stdin ?? process.stdin;
  let onExit: (last: TerminalThread | null) => void = () => {};
  // Read by both ends of the race below: Ink's own exit resolves as the unmount below ends.
  let lastThread: TerminalThread | null = null;
  const quit = new Promise<void>((resolve) => {
    onExit = (last) => {
      lastThread = last;
      resolve();
    };
  });
  const maxFps = options.maxFps ?? DEFAULT_MAX_FPS;
  const storeOptions: ConversationStoreOptions = { frameMs: 1000 / maxFps, ...mount.store };
  const session = new TuiSession(
    options.thread instanceof Promise ? null : options.thread,
    options.modelId,
    storeOptions,
    options.saved,
  );
  const instance = render(React.createElement(TuiApp, { options, session, onExit, storeOptions }), {
    stdout,
    stdin,
    exitOnCtrlC: false,
    // The CLI only runs the TUI on a terminal; a CI variable in a person's shell must not turn
    // it into a print-the-last-frame logger.
    interactive: Boolean(stdout.isTTY),
    // Only changed lines are rewritten: while the model types, a frame is the partial line and
    // the status, about a fifth of the bytes of a full redraw.
    incrementalRendering: true,
    // The store paces the frames (at most maxFps, and by their cost); Ink's own throttle, set
    // above that pace, then draws each frame as it is published, within the time the store measures.
    maxFps: maxFps * 2,
    ...mount.ink,
  });
  const unmounted = quit.then(async () => {
    // The conversation stays in the scrollback; the prompt and status line go.
    instance.clear();
    instance.unmount();
    await instance.waitUntilExit();
  });
  // Ink exits on its own only when rendering threw; that error is the caller's to see.
  const exited = Promise.race([unmounted, instance.waitUntilExit()])
    .then(() => ({ thread: lastThread }))
    .finally(() => session.close());
  return { instance, exited };
}

export { pickSession } from "./session-picker.js";
