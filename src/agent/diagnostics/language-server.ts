import { spawn } from "node:child_process";
import { pathToFileURL } from "node:url";
import { LspConnection } from "./lsp-connection.js";

/** One diagnostic as the server reported it (0-based positions, as in LSP). */
export interface ServerDiagnostic {
  line: number;
  character: number;
  /** 1 error, 2 warning, 3 information, 4 hint; absent means the client decides (taken as error). */
  severity: number | undefined;
  message: string;
  code: string | undefined;
}

/** Documents kept open per server; past it the least recently checked is closed. */
const MAX_OPEN_DOCUMENTS = 64;
/** Diagnostics kept per document (a file with thousands of errors is not worth more). */
const MAX_DIAGNOSTICS_PER_DOCUMENT = 500;
/**
 * A server may publish a document's diagnostics in steps (TypeScript: syntax, then semantics); once
 * one arrives, a later one within this quiet time replaces it.
 */
const SETTLE_MS = 250;

interface OpenDocument {
  version: number;
  text: string;
  languageId: string;
  diagnostics: ServerDiagnostic[] | null;
}

export interface SpawnSpec {
  file: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
}

/**
 * A running language server for one workspace: initialized once, documents opened on first use and
 * kept in step with the text Spark checks, diagnostics waited for after each change.
 */
export class LanguageServer {
  private readonly connection: LspConnection;
  private readonly documents = new Map<string, OpenDocument>();
  private readonly listeners = new Set<(uri: string) => void>();
  /** Settles once `initialize` is answered; rejects when it fails. */
  readonly ready: Promise<void>;

  constructor(
    spawnSpec: SpawnSpec,
    root: string,
    initializationOptions: Record<string, unknown> | undefined,
    private readonly pull: "tsserver" | undefined,
    /** What `workspace/configuration` answers, by section; others get null (the server's default). */
    settings: Record<string, unknown> = {},
  ) {
    const child = spawn(spawnSpec.file, spawnSpec.args, {
      cwd: spawnSpec.cwd,
      env: spawnSpec.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.connection = new LspConnection(child, {
      onNotification: (method, params) => {
        if (method === "textDocument/publishDiagnostics") this.published(params);
      },
      onRequest: (method, params) => {
        // Settings asked for by section: the spec's, else null (the server's default).
        if (method === "workspace/configuration") {
          const items = (params as { items?: unknown } | null)?.items;
          if (!Array.isArray(items)) return [];
          return items.map((item) => {
            const section = (item as { section?: unknown } | null)?.section;
            return typeof section === "string" && Object.hasOwn(settings, section) ? settings[section] : null;
          });
        }
        return null;
      },
    });
    const rootUri = pathToFileURL(root).href;
    this.ready = this.connection
      .request("initialize", {
        // Not Spark's pid: in the sandbox's PID namespace it names no process, and servers that
        // watch it would exit at once. The sandbox ends them with Spark (--die-with-parent).
        processId: null,
        rootUri,
        rootPath: root,
        workspaceFolders: [{ uri: rootUri, name: "workspace" }],
        capabilities: {
          textDocument: {
            synchronization: { didSave: false, dynamicRegistration: false },
            publishDiagnostics: { versionSupport: true },
          },
          workspace: { configuration: true, workspaceFolders: true },
        },
        ...(initializationOptions ? { initializationOptions } : {}),
      })
      .then(() => this.connection.notify("initialized", {}));
    // Observed through `ready` or `ended`; never an unhandled rejection.
    this.ready.catch(() => {});
  }

  get closed(): boolean {
    return this.connection.closed;
  }

  /** Settles with the reason once the server has stopped or failed. */
  get ended(): Promise<Error> {
    return this.connection.ended;
  }

  /**
   * Sets the document at `path` to `text` (opening it first if needed) and resolves its diagnostics
   * for that text; null when none came before `deadline` (ms since the epoch) or the server ended.
   */
  async diagnosticsFor(
    path: string,
    languageId: string,
    text: string,
    deadline: number,
  ): Promise<ServerDiagnostic[] | null> {
    const uri = pathToFileURL(path).href;
    let document = this.documents.get(uri);
    if (document && document.text === text && document.diagnostics !== null) {
      this.touch(uri, document);
      return document.diagnostics;
    }
    if (document) {
      document.version++;
      document.text = text;
      document.diagnostics = null;
      this.connection.notify("textDocument/didChange", {
        textDocument: { uri, version: document.version },
        contentChanges: [{ text }],
      });
    } else {
      document = { version: 1, text, languageId, diagnostics: null };
      this.connection.notify("textDocument/didOpen", { textDocument: { uri, languageId, version: 1, text } });
    }
    this.touch(uri, document);
    if (this.pull === "tsserver") return this.pullFromTsserver(uri, document, deadline);
    return this.waitForDiagnostics(uri, document, deadline);
  }

  /**
   * typescript-language-server publishes nothing when a file had no errors and still has none, so
   * its diagnostics are asked for instead, through its pass-through to tsserver's synchronous
   * requests (answered in order after the change).
   */
  private async pullFromTsserver(
    uri: string,
    document: OpenDocument,
    deadline: number,
  ): Promise<ServerDiagnostic[] | null> {
    const ask = (command: string) =>
      this.connection.request("workspace/executeCommand", {
        command: "typescript.tsserverRequest",
        arguments: [command, { file: uri }],
      });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), Math.max(0, deadline - Date.now()));
    });
    try {
      const answers = await Promise.race([
        Promise.all([ask("syntacticDiagnosticsSync"), ask("semanticDiagnosticsSync")]),
        late,
      ]);
      if (answers === null) return null;
      const diagnostics = answers.flatMap(parseTsserverDiagnostics);
      // Only if the text has not changed again meanwhile (another check of the same file).
      if (document.text === this.documents.get(uri)?.text) document.diagnostics = diagnostics;
      return diagnostics;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Asks the server to shut down; kills it when it has not exited after `graceMs`. */
  async stop(graceMs = 1000): Promise<void> {
    if (!this.connection.closed) {
      const timer = new Promise((resolve) => setTimeout(resolve, graceMs).unref());
      await Promise.race([this.connection.request("shutdown", null).catch(() => {}), timer]);
      this.connection.notify("exit", null);
    }
    await this.connection.close(graceMs);
  }

  private touch(uri: string, document: OpenDocument): void {
    this.documents.delete(uri);
    this.documents.set(uri, document);
    if (this.documents.size <= MAX_OPEN_DOCUMENTS) return;
    const oldest = this.documents.keys().next().value as string;
    this.documents.delete(oldest);
    this.connection.notify("textDocument/didClose", { textDocument: { uri: oldest } });
  }

  private waitForDiagnostics(
    uri: string,
    document: OpenDocument,
    deadline: number,
  ): Promise<ServerDiagnostic[] | null> {
    return new Promise((resolve) => {
      let settle: NodeJS.Timeout | undefined;
      const finish = (result: ServerDiagnostic[] | null) => {
        clearTimeout(settle);
        clearTimeout(timeout);
        this.listeners.delete(listener);
        resolve(result);
      };
      const listener = (published: string) => {
        if (published !== uri || document.diagnostics === null) return;
        clearTimeout(settle);
        const remaining = deadline - Date.now();
        settle = setTimeout(() => finish(document.diagnostics), Math.max(0, Math.min(SETTLE_MS, remaining)));
      };
      const timeout = setTimeout(() => finish(document.diagnostics), Math.max(0, deadline - Date.now()));
      this.listeners.add(listener);
      void this.connection.ended.then(() => finish(null));
    });
  }

  private published(params: unknown): void {
    if (this.pull || typeof params !== "object" || params === null) return;
    const { uri, version, diagnostics } = params as Record<string, unknown>;
    if (typeof uri !== "string" || !Array.isArray(diagnostics)) return;
    const document = this.documents.get(uri);
    if (!document) return;
    // Diagnostics of an older text, still on their way when the text changed.
    if (typeof version === "number" && version !== document.version) return;
    document.diagnostics = diagnostics.slice(0, MAX_DIAGNOSTICS_PER_DOCUMENT).flatMap(parseDiagnostic);
    for (const listener of this.listeners) listener(uri);
  }
}

function parseDiagnostic(raw: unknown): ServerDiagnostic[] {
  if (typeof raw !== "object" || raw === null) return [];
  const { range, severity, message, code } = raw as Record<string, unknown>;
  const start = (range as { start?: { line?: unknown; character?: unknown } } | undefined)?.start;
  if (!start || !Number.isInteger(start.line) || !Number.isInteger(start.character)) return [];
  if (typeof message !== "string") return [];
  return [
    {
      line: start.line as number,
      character: start.character as number,
      severity: typeof severity === "number" ? severity : undefined,
      message,
      code: typeof code === "string" || typeof code === "number" ? String(code) : undefined,
    },
  ];
}

/** tsserver's answer to a `*DiagnosticsSync` request: `{body: [{start: {line, offset}, text, code, category}]}` (1-based). */
function parseTsserverDiagnostics(answer: unknown): ServerDiagnostic[] {
  const body = (answer as { body?: unknown } | null)?.body;
  if (!Array.isArray(body)) throw new Error("tsserver answered without diagnostics");
  return body.slice(0, MAX_DIAGNOSTICS_PER_DOCUMENT).flatMap((raw: unknown): ServerDiagnostic[] => {
    if (typeof raw !== "object" || raw === null) return [];
    const { start, text, code, category } = raw as Record<string, unknown>;
    const { line, offset } = (start ?? {}) as { line?: unknown; offset?: unknown };
    if (!Number.isInteger(line) || !Number.isInteger(offset) || typeof text !== "string") return [];
    return [
      {
        line: (line as number) - 1,
        character: (offset as number) - 1,
        severity: category === "error" ? 1 : category === "warning" ? 2 : 3,
        message: text,
        code: typeof code === "number" || typeof code === "string" ? String(code) : undefined,
      },
    ];
  });
}
