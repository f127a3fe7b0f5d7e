import { accessSync, constants } from "node:fs";
import { createRequire } from "node:module";
import { delimiter, dirname, extname, join } from "node:path";

/** How to start one language server: an executable and its arguments, speaking LSP on stdio. */
export interface ServerCommand {
  file: string;
  args: string[];
  /** Sent as `initializationOptions`. */
  initializationOptions?: Record<string, unknown>;
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
  pathServer("rust-analyzer", [".rs"], "rust"),
  pathServer("gopls", [".go"], "go"),
  pathServer("clangd", [".c", ".h", ".cc", ".cpp", ".hpp"], "cpp"),
];

function pathServer(name: string, extensions: readonly string[], languageId: string): LanguageServerSpec {
  return {
    name,
    extensions,
    languageId: () => languageId,
    command() {
      const file = onPath(name);
      return file ? { file, args: [] } : `${name} is not on PATH`;
    },
  };
}

/** The server for a file, by its extension; null when none is known. */
export function serverFor(path: string, table: readonly LanguageServerSpec[]): LanguageServerSpec | null {
  const extension = extname(path).toLowerCase();
  return table.find((spec) => spec.extensions.includes(extension)) ?? null;
}
