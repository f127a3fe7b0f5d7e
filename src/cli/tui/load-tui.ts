/**
 * The terminal UI's module, with React's production build whatever NODE_ENV the person's shell has
 * (a test runner's `test`, a `development` left in a profile). React and Ink's reconciler pick their
 * build from NODE_ENV as they load, and the development build records far more per element and
 * frame: while the model streams, CPU the engine does not get. NODE_ENV is changed only for the
 * import, so the commands the agent runs see the person's own environment.
 */
export async function loadTui(): Promise<typeof import("./run-tui.js")> {
  const before = process.env.NODE_ENV;
  process.env.NODE_ENV = "production";
  try {
    return await import("./run-tui.js");
  } finally {
    if (before === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = before;
  }
}
