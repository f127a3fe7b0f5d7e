import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { CommandSandbox } from "../sandbox/command-sandbox.js";
import { applyPatchTool } from "../tools/apply-patch.js";
import { type TempWorkspace, tempWorkspace } from "../tools/test-support/temp-workspace.js";
import { runTool } from "../tools/tool.js";
import { EditDiagnostics } from "./edit-diagnostics.js";
import { LANGUAGE_SERVERS, type LanguageServerSpec } from "./server-table.js";

const patch = (...lines: string[]) => ["*** Begin Patch", ...lines, "*** End Patch"].join("\n");

/** Generous: a cold server on a busy test machine; the defaults are what Spark uses. */
const BUDGETS = { budgetMs: 30_000, startBudgetMs: 60_000 };

const TSCONFIG = JSON.stringify({
  compilerOptions: { strict: true, noEmit: true, target: "es2022" },
  include: ["src"],
});

describe("diagnostics after apply_patch, from the real typescript-language-server", () => {
  let t: TempWorkspace;
  let diagnostics: EditDiagnostics;

  beforeAll(async () => {
    t = await tempWorkspace({
      files: {
        "tsconfig.json": TSCONFIG,
        "src/math.ts": "export function double(n: number): number {\n  return n * 2;\n}\n",
        "src/legacy.ts": "export const broken: number = 'already wrong';\n\nexport const fine = 1;\n",
      },
    });
    diagnostics = new EditDiagnostics({ root: t.dir, sandbox: new CommandSandbox(), ...BUDGETS });
  });
  afterAll(async () => {
    await diagnostics?.dispose();
    await t?.[Symbol.asyncDispose]();
  });

  const apply = (text: string) =>
    runTool(applyPatchTool, JSON.stringify({ patch: text }), t.context({ diagnostics }));

  test("a patch that introduces a type error gets that error in its result, under the diff", async () => {
    const result = await apply(
      patch(
        "*** Update File: src/math.ts",
        " export function double(n: number): number {",
        "-  return n * 2;",
        '+  const label: number = "twice";',
        "+  return n * 2 + label;",
        " }",
      ),
    );
    expect(result.isError).toBe(false);
    expect(result.output).toBe(
      [
        "Updated src/math.ts (+2 -1)",
        "Errors this edit introduced (fix them):",
        "src/math.ts:2:9: Type 'string' is not assignable to type 'number'. (2322)",
      ].join("\n"),
    );
    expect(result.display).toMatchObject({
      kind: "diff",
      diagnostics: [
        {
          path: "src/math.ts",
          line: 2,
          column: 9,
          message: "Type 'string' is not assignable to type 'number'. (2322)",
        },
      ],
    });
    expect((await t.read("src/math.ts")).toString()).toContain('const label: number = "twice";');
  });

  test("a patch that fixes it reports no error", async () => {
    const result = await apply(
      patch(
        "*** Update File: src/math.ts",
        '-  const label: number = "twice";',
        "+  const label: number = 2;",
      ),
    );
    expect(result).toMatchObject({ isError: false, output: "Updated src/math.ts (+1 -1)" });
    expect(result.display).toEqual({
      kind: "diff",
      files: [expect.objectContaining({ path: "src/math.ts" })],
    });
  });

  test("an edit that leaves a file without errors reports none (and no notice)", async () => {
    const result = await apply(
      patch("*** Update File: src/math.ts", "-  return n * 2 + label;", "+  return n * 2 + label + 0;"),
    );
    expect(result).toMatchObject({ isError: false, output: "Updated src/math.ts (+1 -1)" });
  });

  test("errors the file already had are not reported again; a new file's errors are", async () => {
    const result = await apply(
      patch(
        "*** Update File: src/legacy.ts",
        "-export const fine = 1;",
        "+export const fine = 2;",
        "*** Add File: src/extra.ts",
        "+import { double } from './math';",
        "+export const x: string = double(1);",
      ),
    );
    expect(result.output).toBe(
      [
        "Updated src/legacy.ts (+1 -1)",
        "Added src/extra.ts (+2 -0)",
        "Errors this edit introduced (fix them):",
        "src/extra.ts:2:14: Type 'number' is not assignable to type 'string'. (2322)",
      ].join("\n"),
    );
  });
});

describe("diagnostics when a server is missing or fails", () => {
  const missing: LanguageServerSpec = {
    name: "no-such-language-server",
    extensions: [".ts"],
    languageId: () => "typescript",
    command: () => "no-such-language-server is not on PATH",
  };
  const failing: LanguageServerSpec = {
    ...missing,
    name: "failing-server",
    command: () => ({ file: "/bin/sh", args: ["-c", "echo cannot start >&2; exit 3"] }),
  };
  const node = (name: string, script: string): LanguageServerSpec => ({
    ...missing,
    name,
    command: () => ({ file: process.execPath, args: ["-e", script] }),
  });
  const oversized = node(
    "oversized-server",
    "process.stdin.once('data', () => process.stdout.write('Content-Length: 999999999\\r\\n\\r\\n{')); setInterval(() => {}, 1000);",
  );
  const garbled = node(
    "garbled-server",
    "process.stdin.once('data', () => process.stdout.write('Content-Length: 3\\r\\n\\r\\n{{{')); setInterval(() => {}, 1000);",
  );
  // Reads its input and never answers.
  const silent = node("silent-server", "process.stdin.resume();");

  for (const [what, spec, notice, budgets = BUDGETS] of [
    [
      "missing",
      missing,
      /^Diagnostics: no-such-language-server is not on PATH; no errors are checked for these files\.$/,
    ],
    // The stderr tail may start with lines of the machine's shell set-up.
    [
      "failing",
      failing,
      /^Diagnostics: failing-server failed \(it exited \(code 3\); stderr: (.* \| )?cannot start\)\.$/,
    ],
    [
      "oversized",
      oversized,
      /^Diagnostics: oversized-server failed \(it sent a message of 999999999 bytes(; stderr: .*)?\)\.$/,
    ],
    [
      "garbled",
      garbled,
      /^Diagnostics: garbled-server failed \(it sent a message that is not JSON(; stderr: .*)?\)\.$/,
    ],
    [
      "silent",
      silent,
      /^Diagnostics: silent-server is still starting; errors will be reported after later edits\.$/,
      { startBudgetMs: 300 },
    ],
  ] as const) {
    test(`${what} server: a one-line notice, and the edit still applies`, async () => {
      await using t = await tempWorkspace({ files: { "a.ts": "export const a = 1;\n" } });
      const diagnostics = new EditDiagnostics({
        root: t.dir,
        sandbox: new CommandSandbox(),
        servers: [spec],
        ...budgets,
      });
      try {
        const result = await runTool(
          applyPatchTool,
          JSON.stringify({
            patch: patch("*** Update File: a.ts", "-export const a = 1;", "+export const a = 2;"),
          }),
          t.context({ diagnostics }),
        );
        expect(result.isError).toBe(false);
        const [summary, line, ...rest] = result.output.split("\n");
        expect(summary).toBe("Updated a.ts (+1 -1)");
        expect(line).toMatch(notice);
        expect(rest).toEqual([]);
        expect(result.display).toMatchObject({ diagnosticsNotices: [line] });
        expect((await t.read("a.ts")).toString()).toBe("export const a = 2;\n");
      } finally {
        await diagnostics.dispose();
      }
    });
  }
});

describe("a server's life", () => {
  test("a server unused for the idle time is stopped; the next edit starts it again", async () => {
    await using t = await tempWorkspace({
      files: { "tsconfig.json": TSCONFIG, "src/a.ts": "export const a = 1;\n" },
    });
    const stops: string[] = [];
    let stopped = () => {};
    const diagnostics = new EditDiagnostics({
      root: t.dir,
      sandbox: new CommandSandbox(),
      servers: LANGUAGE_SERVERS.filter((spec) => spec.name === "typescript-language-server"),
      ...BUDGETS,
      idleMs: 200,
      onStopped: (server, why) => {
        stops.push(`${server}: ${why}`);
        stopped();
      },
    });
    try {
      const edit = (from: string, to: string) =>
        runTool(
          applyPatchTool,
          JSON.stringify({ patch: patch("*** Update File: src/a.ts", `-${from}`, `+${to}`) }),
          t.context({ diagnostics }),
        );
      const firstStop = new Promise<void>((resolve) => {
        stopped = resolve;
      });
      expect((await edit("export const a = 1;", "export const a: string = 1;")).output).toBe(
        "Updated src/a.ts (+1 -1)\nErrors this edit introduced (fix them):\nsrc/a.ts:1:14: Type 'number' is not assignable to type 'string'. (2322)",
      );
      await firstStop;
      // It exits on its own after `shutdown` and `exit`.
      expect(stops).toEqual([expect.stringMatching(/^typescript-language-server: it exited \(code 0\)/)]);
      expect((await edit("export const a: string = 1;", "export const a: string = '1';")).output).toBe(
        "Updated src/a.ts (+1 -1)",
      );
    } finally {
      await diagnostics.dispose();
    }
  });
});

describe("sharing", () => {
  test("edits checked at once (two threads of one workspace) share one server", async () => {
    await using t = await tempWorkspace({ files: { "tsconfig.json": TSCONFIG } });
    const stops: string[] = [];
    const diagnostics = new EditDiagnostics({
      root: t.dir,
      sandbox: new CommandSandbox(),
      ...BUDGETS,
      onStopped: (server) => stops.push(server),
    });
    const file = (name: string) => ({
      path: `src/${name}.ts`,
      absolute: `${t.dir}/src/${name}.ts`,
      before: null,
      after: `export const ${name}: boolean = 0;\n`,
    });
    for (const name of ["a", "b"]) await t.write(`src/${name}.ts`, file(name).after);
    const reports = await Promise.all([diagnostics.check([file("a")]), diagnostics.check([file("b")])]);
    expect(reports.map((report) => report.diagnostics.map((d) => `${d.path}:${d.line}:${d.column}`))).toEqual(
      [["src/a.ts:1:14"], ["src/b.ts:1:14"]],
    );
    await diagnostics.dispose();
    expect(stops).toEqual(["typescript-language-server"]);
  });
});

describe("diagnostics from the real pyright", () => {
  test("a patch that introduces a type error gets it; files of other languages are not checked", async () => {
    await using t = await tempWorkspace({
      files: { "app.py": "def double(n: int) -> int:\n    return n * 2\n", "notes.txt": "hello\n" },
    });
    const servers = LANGUAGE_SERVERS.filter((spec) => spec.name === "pyright");
    const diagnostics = new EditDiagnostics({
      root: t.dir,
      sandbox: new CommandSandbox(),
      servers,
      ...BUDGETS,
    });
    try {
      const result = await runTool(
        applyPatchTool,
        JSON.stringify({
          patch: patch(
            "*** Update File: app.py",
            " def double(n: int) -> int:",
            "-    return n * 2",
            '+    return "twice"',
            "*** Update File: notes.txt",
            "-hello",
            "+bye",
          ),
        }),
        t.context({ diagnostics }),
      );
      expect(result.isError).toBe(false);
      const lines = result.output.split("\n");
      expect(lines.slice(0, 3)).toEqual([
        "Updated app.py (+1 -1)",
        "Updated notes.txt (+1 -1)",
        "Errors this edit introduced (fix them):",
      ]);
      expect(lines[3]).toMatch(
        /^app\.py:2:12: Type "Literal\['twice'\]" is not assignable to return type "int"/,
      );
      expect(lines).toHaveLength(4);
    } finally {
      await diagnostics.dispose();
    }
  });
});
