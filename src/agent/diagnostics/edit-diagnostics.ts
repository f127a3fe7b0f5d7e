import type { EditDiagnostic } from "../../protocol/agent.js";
import type { CommandSandbox } from "../sandbox/command-sandbox.js";
import { LanguageServer, type ServerDiagnostic } from "./language-server.js";
import { installPaths, LANGUAGE_SERVERS, type LanguageServerSpec, serverFor } from "./server-table.js";

export type { EditDiagnostic };

/** One file a patch wrote. */
export interface EditedFile {
  /** As shown: relative to the workspace root. */
  path: string;
  absolute: string;
  /** null: the file did not exist before. */
  before: string | null;
  after: string;
}

export interface DiagnosticsReport {
  /** Errors the edit introduced, at most {@link MAX_DIAGNOSTICS}. */
  diagnostics: EditDiagnostic[];
  /** Errors beyond those listed. */
  more: number;
  /** One line each: a server that is missing, failed, starting or late. */
  notices: string[];
}

export interface EditDiagnosticsOptions {
  root: string;
  /** Where the servers run: the sandbox commands run in (and its clean environment). */
  sandbox: CommandSandbox;
  /** Default: the built-in table. */
  servers?: readonly LanguageServerSpec[];
  /** The wait for a warm server's diagnostics. Default: 3 s. */
  budgetMs?: number;
  /** The wait on a server's first edit, start-up included. Default: 10 s. */
  startBudgetMs?: number;
  /** A server unused this long is stopped. Default: 5 minutes. */
  idleMs?: number;
  /** Told once a server has stopped (idle, failed, or disposed), with why. */
  onStopped?: (server: string, why: string) => void;
  /**
   * Whether the person trusts the project (`spark trust`), asked before starting a server that may
   * run the project's own programs (see LanguageServerSpec.runsProjectCode). Default: never.
   */
  projectTrusted?: () => Promise<boolean>;
}

export const MAX_DIAGNOSTICS = 20;
const MAX_MESSAGE_CHARS = 300;
/** Files larger than this are not sent to a server. */
const MAX_FILE_CHARS = 1024 * 1024;

interface Running {
  server: LanguageServer;
  /** It has answered once: later waits use the warm budget. */
  warm: boolean;
  idle: NodeJS.Timeout | undefined;
  /** Checks on one server run one after another: they share its documents. */
  queue: Promise<unknown>;
}

/**
 * The language servers of one workspace, started on the first edit of a file they handle, shared
 * by its threads, stopped when idle: after a patch, the errors it introduced in the files it
 * changed. Never throws: a missing, failing or slow server becomes a notice.
 */
export class EditDiagnostics {
  private readonly running = new Map<string, Running>();
  private readonly servers: readonly LanguageServerSpec[];
  private disposed = false;

  constructor(private readonly options: EditDiagnosticsOptions) {
    this.servers = options.servers ?? LANGUAGE_SERVERS;
  }

  async check(files: readonly EditedFile[]): Promise<DiagnosticsReport> {
    const groups = new Map<LanguageServerSpec, EditedFile[]>();
    for (const file of files) {
      const spec = serverFor(file.path, this.servers);
      if (!spec || file.after.length > MAX_FILE_CHARS) continue;
      groups.set(spec, [...(groups.get(spec) ?? []), file]);
    }
    const found: EditDiagnostic[] = [];
    const notices: string[] = [];
    await Promise.all(
      [...groups].map(async ([spec, group]) => {
        try {
          const result = await this.checkWith(spec, group);
          found.push(...result.found);
          if (result.notice) notices.push(`Diagnostics: ${result.notice}`);
        } catch (error) {
          notices.push(`Diagnostics: ${spec.name} failed (${messageOf(error)}).`);
        }
      }),
    );
    return {
      diagnostics: found.slice(0, MAX_DIAGNOSTICS),
      more: Math.max(0, found.length - MAX_DIAGNOSTICS),
      notices,
    };
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    const all = [...this.running.values()];
    this.running.clear();
    await Promise.all(all.map((entry) => this.stop(entry)));
  }

  private async checkWith(
    spec: LanguageServerSpec,
    files: readonly EditedFile[],
  ): Promise<{ found: EditDiagnostic[]; notice: string | null }> {
    const entry = await this.serverFor(spec);
    if (typeof entry === "string") return { found: [], notice: entry };
    const run = entry.queue.then(() => this.compare(spec, entry, files));
    entry.queue = run.catch(() => {});
    try {
      return await run;
    } finally {
      this.scheduleIdle(spec, entry);
    }
  }

  private async compare(
    spec: LanguageServerSpec,
    entry: Running,
    files: readonly EditedFile[],
  ): Promise<{ found: EditDiagnostic[]; notice: string | null }> {
    const budget = entry.warm ? (this.options.budgetMs ?? 3000) : (this.options.startBudgetMs ?? 10_000);
    const deadline = Date.now() + budget;
    const late = async () =>
      entry.server.closed
        ? `${spec.name} stopped while checking the edit (${(await entry.server.ended).message}).`
        : entry.warm
          ? `${spec.name} did not answer within ${budget / 1000} s; the edit's errors are not known.`
          : `${spec.name} is still starting; errors will be reported after later edits.`;
    const ready = await Promise.race([
      entry.server.ready.then(() => true),
      new Promise<false>((resolve) =>
        setTimeout(() => resolve(false), Math.max(0, deadline - Date.now())).unref(),
      ),
    ]);
    if (!ready) return { found: [], notice: await late() };
    const found: EditDiagnostic[] = [];
    for (const file of files) {
      const languageId = spec.languageId(extensionOf(file.path));
      const before =
        file.before === null
          ? []
          : await entry.server.diagnosticsFor(file.absolute, languageId, file.before, deadline);
      if (before === null) return { found, notice: await late() };
      const after = await entry.server.diagnosticsFor(file.absolute, languageId, file.after, deadline);
      if (after === null) return { found, notice: await late() };
      entry.warm = true;
      for (const diagnostic of introducedErrors(before, after)) {
        found.push({
          path: file.path,
          line: diagnostic.line + 1,
          column: diagnostic.character + 1,
          message: oneLine(diagnostic.message, diagnostic.code),
        });
      }
    }
    return { found, notice: null };
  }

  /** The running server for `spec`, started if needed; or why there is none. */
  private async serverFor(spec: LanguageServerSpec): Promise<Running | string> {
    if (this.disposed) return `${spec.name} is not running: Spark is shutting down.`;
    const existing = this.running.get(spec.name);
    if (existing && !existing.server.closed) return existing;
    const command = spec.command();
    if (typeof command === "string") return `${command}; no errors are checked for these files.`;
    if (spec.runsProjectCode && !(await this.options.projectTrusted?.().catch(() => false))) {
      return (
        `${spec.name} was not started: ${spec.runsProjectCode}. It starts in a project you trust ` +
        "(`spark trust`); until then no errors are checked for these files."
      );
    }
    let spawnSpec: Awaited<ReturnType<CommandSandbox["spawnFor"]>>;
    try {
      spawnSpec = await this.options.sandbox.spawnFor(
        `exec ${[command.file, ...command.args].map(shellQuote).join(" ")}`,
        this.options.root,
        installPaths(),
      );
    } catch {
      return `${spec.name} did not start: it runs in the command sandbox (--sandbox ${this.options.sandbox.mode}), which does not work here.`;
    }
    // Another thread's edit may have started it meanwhile: one server per workspace and language.
    const started = this.running.get(spec.name);
    if (started && !started.server.closed) return started;
    if (this.disposed) return `${spec.name} is not running: Spark is shutting down.`;
    const server = new LanguageServer(
      { ...spawnSpec, env: { ...spawnSpec.env, ...command.env }, cwd: this.options.root },
      this.options.root,
      command.initializationOptions,
      spec.pull,
      command.settings,
    );
    const entry: Running = { server, warm: false, idle: undefined, queue: Promise.resolve() };
    this.running.set(spec.name, entry);
    void server.ended.then((why) => {
      clearTimeout(entry.idle);
      if (this.running.get(spec.name) === entry) this.running.delete(spec.name);
      this.options.onStopped?.(spec.name, why.message);
    });
    return entry;
  }

  private scheduleIdle(spec: LanguageServerSpec, entry: Running): void {
    clearTimeout(entry.idle);
    entry.idle = setTimeout(
      () => {
        if (this.running.get(spec.name) === entry) this.running.delete(spec.name);
        void this.stop(entry);
      },
      this.options.idleMs ?? 5 * 60_000,
    );
    entry.idle.unref();
  }

  private async stop(entry: Running): Promise<void> {
    clearTimeout(entry.idle);
    await entry.server.stop();
  }
}

/** Errors of `after` that `before` did not have, matched by code and message (lines move). */
function introducedErrors(
  before: readonly ServerDiagnostic[],
  after: readonly ServerDiagnostic[],
): ServerDiagnostic[] {
  const isError = (diagnostic: ServerDiagnostic) => (diagnostic.severity ?? 1) === 1;
  const key = (diagnostic: ServerDiagnostic) => `${diagnostic.code ?? ""}\u0000${diagnostic.message}`;
  const known = new Map<string, number>();
  for (const diagnostic of before.filter(isError))
    known.set(key(diagnostic), (known.get(key(diagnostic)) ?? 0) + 1);
  const introduced: ServerDiagnostic[] = [];
  for (const diagnostic of after.filter(isError)) {
    const count = known.get(key(diagnostic)) ?? 0;
    if (count > 0) known.set(key(diagnostic), count - 1);
    else introduced.push(diagnostic);
  }
  return introduced;
}

function oneLine(message: string, code: string | undefined): string {
  const text = message.replace(/\s*\n\s*/g, " ").trim();
  const short = text.length > MAX_MESSAGE_CHARS ? `${text.slice(0, MAX_MESSAGE_CHARS - 1)}…` : text;
  return code ? `${short} (${code})` : short;
}

/**
 * The report as the model reads it, after the patch's summary: the errors as `path:line:col:
 * message`, then the notices; empty when there is nothing to say. At most about 4 KiB.
 */
export function formatReport(report: DiagnosticsReport): string {
  const lines: string[] = [];
  if (report.diagnostics.length > 0) {
    lines.push("Errors this edit introduced (fix them):");
    let bytes = 0;
    let shown = 0;
    for (const d of report.diagnostics) {
      const line = `${d.path}:${d.line}:${d.column}: ${d.message}`;
      bytes += Buffer.byteLength(line) + 1;
      if (bytes > 3584) break;
      lines.push(line);
      shown++;
    }
    const more = report.diagnostics.length - shown + report.more;
    if (more > 0) lines.push(`... and ${more} more.`);
  }
  lines.push(...report.notices);
  return lines.join("\n");
}

function extensionOf(path: string): string {
  const dot = path.lastIndexOf(".");
  return dot < 0 ? "" : path.slice(dot).toLowerCase();
}

function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
