/**
 * The terminal UI's module, with React's production build. React (and Ink's reconciler) pick their
 * build from NODE_ENV as they load, and the development build checks and records several times more
 * per frame: while the model streams, that is CPU the engine does not get. NODE_ENV is set only
 * for the import, so the commands the agent runs see the person's own environment.
 */
export async function loadTui(): Promise<typeof import("./run-tui.js")> {
  const before = process.env.NODE_ENV;
  process.env.NODE_ENV = before ?? "production";
  try {
    return await import("./run-tui.js");
  } finally {
    if (before === undefined) delete process.env.NODE_ENV;
  }
}
