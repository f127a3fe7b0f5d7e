import path from "node:path";
import { listSessions, sessionsDir } from "../agent/transcript.js";
import { SparkError } from "../protocol/errors.js";
import { listWorkspaceSessions, type SessionSummary } from "../runtime/session-list.js";

/** Asks the person which session to continue; null when they cancelled. */
export type SessionPick = (sessions: SessionSummary[]) => Promise<SessionSummary | null>;

/**
 * The transcript `spark resume` (or `spark exec resume`) continues: the session `id` names (its
 * whole id or an unambiguous start of it), else with `last` the newest of the workspace, else the
 * one the person picks (`pick`, only on a terminal). Null: the person cancelled the picker.
 */
export async function chooseSession(
  id: string | undefined,
  options: { last: boolean; cd?: string | undefined; pick?: SessionPick | undefined },
): Promise<string | null> {
  if (id !== undefined && !options.last) return sessionFile(id);
  const workspace = path.resolve(options.cd ?? process.cwd());
  if (!options.last && !options.pick) {
    throw new SparkError(
      "invalid_request",
      "spark resume needs a session id or --last when it is not on a terminal (spark sessions lists them).",
    );
  }
  const sessions = await listWorkspaceSessions(workspace);
  if (sessions.length === 0) {
    throw new SparkError(
      "not_found",
      `No saved sessions for ${workspace}: there is nothing to resume. spark sessions --all lists every workspace's.`,
    );
  }
  if (options.last) return sessions[0]!.file;
  return (await options.pick!(sessions))?.file ?? null;
}

/** The transcript of the session `id` names; a clear `not_found` when none or several do. */
export async function sessionFile(id: string): Promise<string> {
  const dir = sessionsDir();
  const sessions = /^[\w-]+$/.test(id) ? await listSessions(dir) : [];
  const exact = sessions.find((session) => session.id === id);
  if (exact) return exact.file;
  const matches = sessions.filter((session) => session.id.startsWith(id));
  if (matches.length === 1) return matches[0]!.file;
  if (matches.length > 1) {
    throw new SparkError(
      "invalid_request",
      `'${id}' is the start of ${matches.length} sessions' ids (${matches
        .slice(0, 3)
        .map((session) => session.id)
        .join(", ")}${matches.length > 3 ? ", ..." : ""}); give more of it.`,
    );
  }
  throw new SparkError(
    "not_found",
    `No session '${id}' in ${dir}. spark sessions lists this workspace's sessions.`,
  );
}

/** A transcript's session id (its file name). */
export function sessionIdOf(file: string): string {
  return path.basename(file, ".jsonl");
}
