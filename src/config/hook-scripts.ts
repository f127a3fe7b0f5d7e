import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import path from "node:path";

/** Files one hooks.json may make its trust cover; past it the rest are not looked for. */
const MAX_HOOK_SCRIPTS = 256;

/**
 * The command lines of a hooks.json, read loosely (`hooks.EVENT[].hooks[].command`): whatever else
 * the file holds, a string there is a command some agent may run.
 */
export function hookCommands(hooksJson: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(hooksJson);
  } catch {
    return [];
  }
  const commands: string[] = [];
  const events = (parsed as { hooks?: unknown } | null)?.hooks;
  if (!events || typeof events !== "object") return commands;
  for (const groups of Object.values(events)) {
    if (!Array.isArray(groups)) continue;
    for (const group of groups) {
      const hooks = (group as { hooks?: unknown } | null)?.hooks;
      if (!Array.isArray(hooks)) continue;
      for (const hook of hooks) {
        const command = (hook as { command?: unknown } | null)?.command;
        if (typeof command === "string") commands.push(command);
      }
    }
  }
  return commands;
}

type Token = { word: string } | { op: string };

/** The variables a hook gets that name the project directory (see the agent's thread-hooks.ts). */
const PROJECT_DIR =
  "(?:\\{(?:SPARK_PROJECT_DIR|CLAUDE_PROJECT_DIR)\\}|(?:SPARK_PROJECT_DIR|CLAUDE_PROJECT_DIR)\\b)";
const VARIABLE_AT = new RegExp(`\\$${PROJECT_DIR}`, "y");
const VARIABLES = new RegExp(`\\$${PROJECT_DIR}`, "g");
/** Operators that end a simple command, and redirections (whose next word is a file written or read, not run). */
/** Sticky, like VARIABLE_AT: matched at one position. */
const OPERATOR_AT = /&&|\|\||>>|[;&|()<>\n]/y;
const REDIRECTION = new Set([">", ">>", "<"]);

/**
 * A command line cut into words and operators as bash would (quotes, backslashes), with the
 * variables that name the project directory replaced by `root`; other expansions stay as written.
 */
function lex(command: string, root: string): Token[] {
  const tokens: Token[] = [];
  let word: string | null = null;
  const flush = () => {
    if (word !== null) tokens.push({ word });
    word = null;
  };
  const at = (pattern: RegExp, i: number) => {
    pattern.lastIndex = i;
    return pattern.exec(command)?.[0] ?? null;
  };
  let i = 0;
  while (i < command.length) {
    const char = command[i]!;
    const variable = at(VARIABLE_AT, i);
    const operator = variable === null ? at(OPERATOR_AT, i) : null;
    if (variable !== null) {
      word = (word ?? "") + root;
      i += variable.length;
    } else if (char === "'") {
      const end = command.indexOf("'", i + 1);
      word = (word ?? "") + command.slice(i + 1, end < 0 ? command.length : end);
      i = end < 0 ? command.length : end + 1;
    } else if (char === '"') {
      let text = "";
      for (i++; i < command.length && command[i] !== '"'; i++) {
        if (command[i] === "\\" && i + 1 < command.length) i++;
        text += command[i];
      }
      word = (word ?? "") + text.replace(VARIABLES, () => root);
      i++;
    } else if (char === "\\") {
      word = (word ?? "") + (command[i + 1] ?? "");
      i += 2;
    } else if (operator !== null) {
      flush();
      tokens.push({ op: operator });
      i += operator.length;
    } else if (/\s/.test(char)) {
      flush();
      i++;
    } else {
      word = (word ?? "") + char;
      i++;
    }
  }
  flush();
  return tokens;
}

/** Words that run the command after them. */
const WRAPPERS = new Set(["exec", "command", "nohup", "time", "env", "builtin"]);
/** Programs whose first argument is a script they run; `-c` / `-e` give inline code instead. */
const INTERPRETER =
  /^(?:(?:ba|da|k|z)?sh|python[0-9.]*|node|nodejs|deno|bun|tsx|ts-node|ruby|perl|php|lua|Rscript|source|\.)$/;
const SHELL = /^(?:ba|da|k|z)?sh$/;

/**
 * The files a command line runs: each simple command's program when it is a path (`./run.sh`,
 * `"$CLAUDE_PROJECT_DIR"/hooks/x.sh`), the script an interpreter is given (`python3 check.py`,
 * `bash .spark/hooks/guard.sh`, `source env.sh`), and, inside `bash -c '...'`, the same again.
 * Files a command only reads or writes (`touch marker`, `> log`) are not scripts.
 */
function scriptsRun(command: string, root: string, depth = 0): string[] {
  const scripts: string[] = [];
  let words: string[] = [];
  let redirected = false;
  const end = () => {
    let rest = words;
    words = [];
    while (rest.length > 0 && (/^[A-Za-z_][A-Za-z0-9_]*=/.test(rest[0]!) || WRAPPERS.has(rest[0]!))) {
      rest = rest.slice(1);
      while (rest[0]?.startsWith("-")) rest = rest.slice(1);
    }
    const [program, ...args] = rest;
    if (program === undefined) return;
    if (program.includes("/")) scripts.push(program);
    if (!INTERPRETER.test(path.basename(program))) return;
    for (const [index, arg] of args.entries()) {
      if (arg === "-c" && SHELL.test(path.basename(program)) && depth < 4) {
        scripts.push(...scriptsRun(args[index + 1] ?? "", root, depth + 1));
        return;
      }
      if (["-c", "-e", "-m", "--eval", "-"].includes(arg)) return;
      if (!arg.startsWith("-")) {
        scripts.push(arg);
        return;
      }
    }
  };
  for (const token of lex(command, root)) {
    if ("word" in token) {
      if (redirected) redirected = false;
      else words.push(token.word);
    } else if (REDIRECTION.has(token.op)) {
      redirected = true;
    } else {
      end();
    }
  }
  end();
  return scripts;
}

/**
 * The files inside `root` that the hooks of `hooksJson` run (see scriptsRun: a script run by
 * path, a file given to an interpreter), each with the SHA-256 of its content; keyed by the path
 * relative to `root`, `/`-separated. A named file that does not exist is left out (so one that
 * appears later is a change). Files those scripts run in turn are not followed.
 */
export async function hookScriptDigests(root: string, hooksJson: string): Promise<Record<string, string>> {
  const found = new Set<string>();
  for (const command of hookCommands(hooksJson)) {
    for (const script of scriptsRun(command, root)) {
      const relative = path.relative(root, path.resolve(root, script));
      if (relative === "" || relative.startsWith("..") || path.isAbsolute(relative)) continue;
      found.add(relative.split(path.sep).join("/"));
    }
    if (found.size >= MAX_HOOK_SCRIPTS) break;
  }
  const digests: Record<string, string> = {};
  for (const relative of [...found].sort().slice(0, MAX_HOOK_SCRIPTS)) {
    const file = path.join(root, relative);
    const isFile = await stat(file).then(
      (info) => info.isFile(),
      () => false,
    );
    if (isFile) digests[relative] = await fileDigest(file);
  }
  return digests;
}

function fileDigest(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash("sha256");
    createReadStream(file)
      .on("error", reject)
      .on("data", (chunk) => hash.update(chunk))
      .on("end", () => resolve(hash.digest("hex")));
  });
}

/** The paths whose digest differs between two sets (added, removed or changed), sorted. */
export function changedScripts(trusted: Record<string, string>, now: Record<string, string>): string[] {
  const paths = new Set([...Object.keys(trusted), ...Object.keys(now)]);
  return [...paths].filter((p) => trusted[p] !== now[p]).sort();
}
