import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { Command } from "commander";
import { beforeAll, describe, expect, test } from "vitest";
import { createProgram, LAZY_COMMANDS } from "./main.js";
import { shippedSparkBin as sparkBin } from "./test-support/spark-binary.js";
import { VERSION } from "./version.js";

/** Packages no command line that only asks for the version or the help may load. */
const HEAVY = ["node-llama-cpp", "ink", "react", "@modelcontextprotocol", "zod", "ws", "smol-toml"];

let hooks: string;
beforeAll(async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-lazy-start-"));
  hooks = path.join(dir, "record-loads.mjs");
  // Records the URL of every module loaded after it, and writes them out as the process exits.
  await writeFile(
    hooks,
    `import { registerHooks } from "node:module";
import { writeFileSync } from "node:fs";
const loaded = [];
registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });
process.on("exit", () => writeFileSync(process.env.SPARK_LOADED, loaded.join("\\n")));
`,
  );
});

/** Runs the built `spark <args>`; its output and the modules it loaded. */
async function sparkLoads(args: string[]) {
  const list = path.join(path.dirname(hooks), `loaded-${args.join("_")}.txt`);
  const run = spawnSync(process.execPath, ["--import", hooks, sparkBin, ...args], {
    encoding: "utf8",
    env: { ...process.env, SPARK_LOADED: list },
  });
  const modules = (await readFile(list, "utf8")).split("\n");
  const packages = HEAVY.filter((name) => modules.some((url) => url.includes(`/node_modules/${name}/`)));
  return { ...run, modules, packages };
}

describe("a start in a blink: each command loads what it needs", () => {
  test("spark --version prints the version and loads neither the engine, the views, MCP nor zod", async () => {
    const run = await sparkLoads(["--version"]);
    expect(run.status).toBe(0);
    expect(run.stdout.trim()).toBe(VERSION);
    // The recorder itself works: it saw the CLI's own entry module.
    expect(run.modules.some((url) => url.endsWith("/dist/cli/main.js"))).toBe(true);
    expect(run.packages).toEqual([]);
    expect(run.modules.filter((url) => /\/dist\/(engine|server|agent|host|runtime)\//.test(url))).toEqual([]);
  });

  test("spark --help lists every command and loads none of them", async () => {
    const run = await sparkLoads(["--help"]);
    expect(run.status).toBe(0);
    for (const name of Object.keys(LAZY_COMMANDS))
      expect(run.stdout).toMatch(new RegExp(`^  ${name}\\b`, "m"));
    expect(run.stdout).toContain("exec [options] <prompt...>");
    expect(run.stdout).toContain("serve a model over");
    expect(run.packages).toEqual([]);
    expect(
      run.modules.filter((url) => /-command\.js$/.test(url) && !url.endsWith("/agent-commands.js")),
    ).toEqual([]);
  });

  test("a command named on the command line is loaded in full: spark serve --help, spark doctor --help", async () => {
    const serve = await sparkLoads(["serve", "--help"]);
    expect(serve.status).toBe(0);
    expect(serve.stdout).toContain("Usage: spark serve [options]");
    expect(serve.stdout).toContain("--api-key-file");
    const doctor = await sparkLoads(["doctor", "--help"]);
    expect(doctor.status).toBe(0);
    expect(doctor.stdout).toContain("Usage: spark doctor [options]");
  });

  test("an option value that looks like a command is not taken for one", async () => {
    // `-C serve`: the workspace folder is named serve; `spark` itself is asked for help.
    const run = await sparkLoads(["-C", "serve", "--help"]);
    expect(run.status).toBe(0);
    expect(run.stdout).toContain("Usage: spark [options] [command] [prompt...]");
    expect(run.modules.some((url) => url.endsWith("/serve-command.js"))).toBe(false);
  });
});

test("each command's summary in the list is the description its own module gives it", async () => {
  for (const [name, lazy] of Object.entries(LAZY_COMMANDS)) {
    const program = await createProgram(["node", "spark", name]);
    const loaded = program.commands.find((command) => command.name() === name)!;
    expect({ name, description: loaded.description() }).toEqual({ name, description: lazy.summary });
    // The full command: its options (and subcommands) are there.
    expect(loaded.options.length + loaded.commands.length).toBeGreaterThan(0);
  }
  const listed = (await createProgram([])).commands.map((command: Command) => command.name());
  expect(listed).toEqual(["exec", "resume", "attach", ...Object.keys(LAZY_COMMANDS)]);
});
