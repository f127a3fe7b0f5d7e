import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/**
 * DESIGN.md's import rules, as one table: the layers each layer may import besides itself. A layer
 * is a folder under `src/` (`vscode/src/` is the `vscode` layer). Tests and `test-support/` folders
 * assemble whole stacks (a scripted engine behind a real server behind an agent) and are exempt.
 */
const MAY_IMPORT = {
  /** Wire types and schemas. No I/O, nothing of Spark. */
  protocol: [],
  /** Terminal drawing helpers (status line, progress bar) shared by cli and bench. */
  terminal: [],
  engine: ["protocol"],
  /** Model resolution reports progress through callbacks; it never draws. */
  models: ["protocol"],
  client: ["protocol"],
  "client-core": ["protocol"],
  server: ["protocol", "engine", "models"],
  agent: ["protocol", "client"],
  host: ["protocol", "client", "agent"],
  /** The user's and the project's settings, turned into the server's terms (above server, below cli). */
  config: ["protocol", "engine", "models", "server"],
  bench: ["protocol", "terminal", "engine", "models", "client", "server", "agent", "config"],
  /**
   * What the faces share (the terminal, exec, serve, ACP): the agent runtime, its tiers' engines,
   * sessions, worktrees, hooks and the in-process host. It never parses arguments or draws.
   */
  runtime: ["protocol", "engine", "models", "client", "client-core", "server", "agent", "host", "config"],
  /** The entry point: registers every command, bench's and serve's (which serves web) included. */
  cli: [
    "protocol",
    "terminal",
    "engine",
    "models",
    "client",
    "client-core",
    "server",
    "agent",
    "host",
    "config",
    "runtime",
    "bench",
    "web",
  ],
  web: ["protocol", "client-core"],
  vscode: ["protocol", "client-core", "config"],
} as const satisfies Record<string, readonly string[]>;

type Layer = keyof typeof MAY_IMPORT;

/** Single-file arrows a layer rule does not allow, each with its reason. */
const NARROW_ARROWS: readonly { from: string; to: string; why: string }[] = [
  {
    from: "src/engine/upstream/",
    to: "src/client/server-sent-events.ts",
    why: "the upstream engine reuses the client's SSE parser",
  },
];

/** Packages `protocol` may use: schema validation only. */
const PROTOCOL_PACKAGES = new Set(["zod"]);

interface Import {
  /** Repository-relative path of the importing file. */
  file: string;
  /** The specifier as written. */
  specifier: string;
  /** Repository-relative path it resolves to; null for packages. */
  target: string | null;
  /** `import type` / `export type`: erased at run time. */
  typeOnly: boolean;
}

const ROOT = path.resolve(import.meta.dirname, "..");
const SOURCE_ROOTS = ["src", "vscode/src"];

function sourceFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) files.push(...sourceFiles(rel));
    else if (/\.(ts|tsx|mts)$/.test(entry.name) && !entry.name.endsWith(".d.ts")) files.push(rel);
  }
  return files;
}

function isTestCode(file: string): boolean {
  return /\.test\.tsx?$/.test(file) || file.split("/").includes("test-support");
}

function typeOnlyImport(node: ts.ImportDeclaration): boolean {
  const clause = node.importClause;
  if (!clause) return false;
  if (clause.isTypeOnly) return true;
  const bindings = clause.namedBindings;
  return (
    clause.name === undefined &&
    bindings !== undefined &&
    ts.isNamedImports(bindings) &&
    bindings.elements.length > 0 &&
    bindings.elements.every((element) => element.isTypeOnly)
  );
}

/** Every static, re-exported and dynamic `import()` specifier of `file`. */
function importsOf(file: string, text: string): Import[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const found: Import[] = [];
  const add = (specifier: string, typeOnly: boolean) => {
    const target = specifier.startsWith(".")
      ? path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier)).replace(/\.js$/, ".ts")
      : null;
    found.push({ file, specifier, target, typeOnly });
  };
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier.text, typeOnlyImport(node));
    } else if (
      ts.isExportDeclaration(node) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      add(node.moduleSpecifier.text, node.isTypeOnly);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      add(node.arguments[0].text, false);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      const literal = node.argument.literal;
      if (ts.isStringLiteral(literal)) add(literal.text, true);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The layer a repository-relative path belongs to; null for files outside every layer. */
function layerOf(file: string): string | null {
  if (file.startsWith("vscode/src/")) return "vscode";
  const parts = file.split("/");
  return parts[0] === "src" && parts.length > 2 ? (parts[1] ?? null) : null;
}

function isLayer(name: string): name is Layer {
  return Object.hasOwn(MAY_IMPORT, name);
}

/** Each import against the table, as one line per offence. */
function layeringViolations(imports: readonly Import[]): string[] {
  const offences: string[] = [];
  for (const { file, specifier, target } of imports) {
    const from = layerOf(file);
    if (from === null) continue;
    if (!isLayer(from)) {
      offences.push(`${file}: the folder '${from}' has no row in MAY_IMPORT (src/layering.test.ts)`);
      continue;
    }
    if (target === null) {
      const name = specifier.startsWith("@")
        ? specifier.split("/").slice(0, 2).join("/")
        : specifier.split("/")[0];
      if (from === "protocol" && !PROTOCOL_PACKAGES.has(name ?? "")) {
        offences.push(
          `${file} imports "${specifier}": protocol uses no package but ${[...PROTOCOL_PACKAGES]}`,
        );
      }
      continue;
    }
    if (target.split("/").includes("test-support") || /\.test\.tsx?$/.test(target)) {
      offences.push(`${file} imports "${specifier}": production code never imports test code`);
      continue;
    }
    const to = layerOf(target);
    if (to === null || to === from) continue;
    const allowed: readonly string[] = MAY_IMPORT[from];
    if (allowed.includes(to)) continue;
    if (NARROW_ARROWS.some((arrow) => file.startsWith(arrow.from) && target === arrow.to)) continue;
    offences.push(
      `${file} imports "${specifier}": ${from} may not import ${to} (${from} may import: ${allowed.join(", ") || "nothing of Spark"})`,
    );
  }
  return offences;
}

/**
 * Strongly connected groups of more than one node (Tarjan), each as its shortest circle through its
 * first member ("a -> b -> a"), followed by the group's other members when the circle misses some.
 */
function cyclesOf(graph: ReadonlyMap<string, ReadonlySet<string>>): string[] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[] = [];
  const connect = (node: string) => {
    index.set(node, counter);
    low.set(node, counter);
    counter++;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        connect(next);
        low.set(node, Math.min(low.get(node) ?? 0, low.get(next) ?? 0));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node) ?? 0, index.get(next) ?? 0));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const group: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop();
      if (member === undefined) break;
      onStack.delete(member);
      group.push(member);
    } while (member !== node);
    if (group.length > 1) cycles.push(describeCycle(graph, group.sort()));
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) connect(node);
  return cycles;
}

/** The shortest circle through the first of `group` (a strongly connected group), and who else is in it. */
function describeCycle(graph: ReadonlyMap<string, ReadonlySet<string>>, group: readonly string[]): string {
  const [start] = group;
  const inGroup = new Set(group);
  const cameFrom = new Map<string, string>();
  const queue = [start as string];
  let last: string | undefined;
  for (let at = 0; at < queue.length && last === undefined; at++) {
    const node = queue[at] as string;
    for (const next of [...(graph.get(node) ?? [])].sort()) {
      if (next === start) {
        last = node;
        break;
      }
      if (!inGroup.has(next) || cameFrom.has(next)) continue;
      cameFrom.set(next, node);
      queue.push(next);
    }
  }
  const circle = [start as string];
  for (let node = last; node !== undefined && node !== start; node = cameFrom.get(node))
    circle.splice(1, 0, node);
  circle.push(start as string);
  const others = group.filter((file) => !circle.includes(file));
  return others.length > 0
    ? `${circle.join(" -> ")} (also tangled: ${others.join(", ")})`
    : circle.join(" -> ");
}

function addEdge(graph: Map<string, Set<string>>, from: string, to: string): void {
  let targets = graph.get(from);
  if (!targets) {
    targets = new Set();
    graph.set(from, targets);
  }
  targets.add(to);
}

/**
 * Cycles between layers and between files, type-only imports included: a module that needs a type
 * of the module importing it shares a piece that belongs in a module of its own.
 */
function importCycles(imports: readonly Import[]): { layers: string[]; files: string[] } {
  const layers = new Map<string, Set<string>>();
  const files = new Map<string, Set<string>>();
  const known = new Set(imports.map((i) => i.file));
  for (const { file, target } of imports) {
    if (target === null) continue;
    const from = layerOf(file);
    const to = layerOf(target);
    if (from !== null && to !== null && from !== to) addEdge(layers, from, to);
    // `./view.js` names `view.tsx` as well as `view.ts`.
    const tsx = target.replace(/\.ts$/, ".tsx");
    addEdge(files, file, !known.has(target) && known.has(tsx) ? tsx : target);
  }
  return { layers: cyclesOf(layers), files: cyclesOf(files) };
}

function productionImports(): Import[] {
  return SOURCE_ROOTS.flatMap(sourceFiles)
    .filter((file) => !isTestCode(file))
    .flatMap((file) => importsOf(file, readFileSync(path.join(ROOT, file), "utf8")));
}

describe("layering (DESIGN.md's import rules)", () => {
  const imports = productionImports();

  it("reads the imports of every layer", () => {
    const layers = new Set(imports.map((i) => layerOf(i.file)));
    for (const layer of [
      "protocol",
      "engine",
      "server",
      "client",
      "agent",
      "host",
      "runtime",
      "cli",
      "web",
      "vscode",
    ]) {
      expect(layers).toContain(layer);
    }
  });

  it("has no import against the table", () => {
    expect(layeringViolations(imports)).toEqual([]);
  });

  it("has no cycle between layers, nor between files (type-only imports included)", () => {
    expect(importCycles(imports)).toEqual({ layers: [], files: [] });
  });
});

describe("the layering check itself", () => {
  it("names each import against the table, with what the layer may import", () => {
    const wrong = importsOf(
      "src/protocol/agent.ts",
      'import "../server/x.js";\nimport { a } from "../engine/engine.js";',
    );
    expect(layeringViolations(wrong)).toEqual([
      'src/protocol/agent.ts imports "../server/x.js": protocol may not import server (protocol may import: nothing of Spark)',
      'src/protocol/agent.ts imports "../engine/engine.js": protocol may not import engine (protocol may import: nothing of Spark)',
    ]);
  });

  it("sees re-exports, dynamic and type imports, and type-only imports still count between layers", () => {
    const text = [
      'export { x } from "../server/a.js";',
      'const m = await import("../host/b.js");',
      'import type { T } from "../engine/c.js";',
      'type U = import("../cli/d.js").U;',
    ].join("\n");
    const found = importsOf("src/agent/z.ts", text);
    expect(found.map((i) => [i.target, i.typeOnly])).toEqual([
      ["src/server/a.ts", false],
      ["src/host/b.ts", false],
      ["src/engine/c.ts", true],
      ["src/cli/d.ts", true],
    ]);
    expect(layeringViolations(found)).toHaveLength(4);
  });

  it("rejects a package in protocol, test code in production, and a folder without a row", () => {
    const offences = layeringViolations([
      ...importsOf("src/protocol/a.ts", 'import fs from "node:fs";'),
      ...importsOf("src/agent/a.ts", 'import { s } from "../engine/test-support/script.js";'),
      ...importsOf("src/gadgets/a.ts", 'import { p } from "../protocol/agent.js";'),
    ]);
    expect(offences).toEqual([
      'src/protocol/a.ts imports "node:fs": protocol uses no package but zod',
      'src/agent/a.ts imports "../engine/test-support/script.js": production code never imports test code',
      "src/gadgets/a.ts: the folder 'gadgets' has no row in MAY_IMPORT (src/layering.test.ts)",
    ]);
  });

  it("allows a narrow arrow only from and to the files it names", () => {
    const sse = 'import { parse } from "../../client/server-sent-events.js";';
    expect(layeringViolations(importsOf("src/engine/upstream/a.ts", sse))).toEqual([]);
    expect(layeringViolations(importsOf("src/engine/llama/a.ts", sse))).toHaveLength(1);
  });

  it("finds folder cycles and file cycles, type-only imports and .tsx files included", () => {
    const imports = [
      ...importsOf("src/cli/main.ts", 'import { b } from "../bench/bench-command.js";'),
      ...importsOf("src/bench/bench-command.ts", 'import { s } from "../cli/status-line.js";'),
      ...importsOf("src/agent/a.ts", 'import { b } from "./b.js";'),
      ...importsOf("src/agent/b.ts", 'import { a } from "./a.js";'),
      ...importsOf("src/agent/c.ts", 'import type { D } from "./d.js";'),
      ...importsOf("src/agent/d.ts", 'import { c } from "./c.js";'),
      ...importsOf("src/web/app.tsx", 'import { v } from "./view.js";'),
      ...importsOf("src/web/view.tsx", 'import type { App } from "./app.js";'),
      ...importsOf("src/agent/e.ts", 'import type { F } from "./f.js";'),
    ];
    expect(importCycles(imports)).toEqual({
      layers: ["bench -> cli -> bench"],
      files: [
        "src/agent/a.ts -> src/agent/b.ts -> src/agent/a.ts",
        "src/agent/c.ts -> src/agent/d.ts -> src/agent/c.ts",
        "src/web/app.tsx -> src/web/view.tsx -> src/web/app.tsx",
      ],
    });
  });

  it("prints a tangle of several files as its shortest circle and the files besides it", () => {
    const imports = [
      ...importsOf("src/cli/a.ts", 'import { b } from "./b.js";\nimport { c } from "./c.js";'),
      ...importsOf("src/cli/b.ts", 'import { a } from "./a.js";'),
      ...importsOf("src/cli/c.ts", 'import { d } from "./d.js";'),
      ...importsOf("src/cli/d.ts", 'import type { A } from "./a.js";'),
    ];
    expect(importCycles(imports).files).toEqual([
      "src/cli/a.ts -> src/cli/b.ts -> src/cli/a.ts (also tangled: src/cli/c.ts, src/cli/d.ts)",
    ]);
  });
});
