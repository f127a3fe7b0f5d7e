import { accessSync, constants } from "node:fs";
import { createRequire } from "node:module";
import { delimiter, dirname, extname, join } from "node:path";

/** How to start one language server: an executable and its arguments, speaking LSP on stdio. */
export interface ServerCommand {
  file: string;
  args: string[];
  /** Sent as `initializationOptions`. */
  initializationOptions?: Record<string, unknown>;
  /** What `workspace/configuration` answers, by section (`rust-analyzer`); others get null (defaults). */
  settings?: Record<string, unknown>;
  /** Variables set for it on top of the sandbox's environment. */
  env?: Record<string, string>;
}

export interface LanguageServerSpec {
  /** Its name in notices: `typescript-language-server`. */
  name: string;
  extensions: readonly string[];
  /** LSP `languageId` of a file, by extension. */
  languageId(extension: string): string;
  /** The command, or why there is none here (not installed). */
  command(): ServerCommand | string;
  /** Ask for diagnostics through tsserver rather than wait for them to be published. */
  pull?: "tsserver";
  /**
   * Why it may run the project's own programs whatever Spark asks of it; then it starts only in a
   * project the person trusted (`spark trust`). Absent: it runs none.
   */
  runsProjectCode?: string;
}

const require = createRequire(import.meta.url);

/**
 * A script of one of Spark's own npm dependencies, run by the Node running Spark. Resolved from
 * Spark's install, never from the repository being edited.
 */
function packageScript(packageName: string, script: string): string | null {
  try {
    return join(dirname(require.resolve(`${packageName}/package.json`)), script);
  } catch {
    return null;
  }
}

/**
 * What a server from Spark's own install reads: Spark's dependencies and the Node running it.
 * Bound read-only into the sandbox, whose private /tmp would hide an install under /tmp.
 */
export function installPaths(): string[] {
  const paths = [dirname(dirname(process.execPath))];
  try {
    paths.push(dirname(dirname(require.resolve("typescript-language-server/package.json"))));
  } catch {
    // Not installed: its server is reported missing.
  }
  return paths;
}

/** An executable on PATH, or null. */
function onPath(name: string, path = process.env.PATH ?? ""): string | null {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    const file = join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {}
  }
  return null;
}

const TS_IDS: Record<string, string> = {
  ".ts": "typescript",
  ".mts": "typescript",
  ".cts": "typescript",
  ".tsx": "typescriptreact",
  ".js": "javascript",
  ".mjs": "javascript",
  ".cjs": "javascript",
  ".jsx": "javascriptreact",
};

/**
 * rust-analyzer without the project's programs: no build scripts (`build.rs`), no proc-macros
 * (they are compiled and run), no `cargo check` on save. Sent at start and again whenever it asks.
 */
export const RUST_ANALYZER_SETTINGS = {
  cargo: { buildScripts: { enable: false } },
  procMacro: { enable: false },
  checkOnSave: false,
} as const;

/** The built-in table: the npm servers Spark ships with, then others where their command is on PATH. */
export const LANGUAGE_SERVERS: readonly LanguageServerSpec[] = [
  {
    name: "typescript-language-server",
    extensions: Object.keys(TS_IDS),
    pull: "tsserver",
    languageId: (extension) => TS_IDS[extension] ?? "typescript",
    command() {
      const cli = packageScript("typescript-language-server", "lib/cli.mjs");
      const tsserver = packageScript("typescript", "lib/tsserver.js");
      if (!cli || !tsserver) return "typescript-language-server is not installed with Spark";
      return {
        file: process.execPath,
        args: [cli, "--stdio"],
        // Spark's TypeScript, not the workspace's (it would run the repository's code), and no
        // automatic typings (they run npm).
        initializationOptions: {
          tsserver: { path: tsserver },
          disableAutomaticTypingAcquisition: true,
          plugins: [],
        },
      };
    },
  },
  {
    name: "pyright",
    extensions: [".py", ".pyi"],
    languageId: () => "python",
    command() {
      const script = packageScript("pyright", "langserver.index.js");
      if (!script) return "pyright is not installed with Spark";
      return { file: process.execPath, args: [script, "--stdio"] };
    },
  },
  {
    ...pathServer("rust-analyzer", [".rs"], "rust", {
      initializationOptions: RUST_ANALYZER_SETTINGS,
      settings: { "rust-analyzer": RUST_ANALYZER_SETTINGS },
    }),
    runsProjectCode:
      "cargo and rust-analyzer follow the repository's .cargo/config.toml, rust-toolchain.toml and " +
      "rust-analyzer.toml, which can name programs to run or turn build scripts back on",
  },
  // A go.mod's `toolchain` line would otherwise have go fetch and run the toolchain it names.
  pathServer("gopls", [".go"], "go", { env: { GOTOOLCHAIN: "local" } }),
  // clangd runs no compiler unless told to (--query-driver), and loads no compiler plugins.
  pathServer("clangd", [".c", ".h", ".cc", ".cpp", ".hpp"], "cpp"),
];

function pathServer(
  name: string,
  extensions: readonly string[],
  languageId: string,
  options: Omit<ServerCommand, "file" | "args"> = {},
): LanguageServerSpec {
  return {
    name,
    extensions,
    languageId: () => languageId,
    command() {
      const file = onPath(name);
      return file ? { file, args: [], ...options } : `${name} is not on PATH`;
    },
  };
}

/** The server for a file, by its extension; null when none is known. */
export function serverFor(path: string, table: readonly LanguageServerSpec[]): LanguageServerSpec | null {
  const extension = extname(path).toLowerCase();
  return table.find((spec) => spec.extensions.includes(extension)) ?? null;
}
