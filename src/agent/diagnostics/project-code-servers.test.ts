import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { CommandSandbox } from "../sandbox/command-sandbox.js";
import { tempWorkspace } from "../tools/test-support/temp-workspace.js";
import { EditDiagnostics } from "./edit-diagnostics.js";
import { LANGUAGE_SERVERS, type LanguageServerSpec, RUST_ANALYZER_SETTINGS } from "./server-table.js";

/**
 * A language server that records what it was told: its initializationOptions, the answer to its
 * `workspace/configuration` request, and its GOTOOLCHAIN, into `seen.json` in its working directory.
 */
const RECORDING_SERVER = `
const fs = require("fs");
let buffer = Buffer.alloc(0);
const seen = {};
const send = (message) => {
  const body = Buffer.from(JSON.stringify({ jsonrpc: "2.0", ...message }));
  process.stdout.write("Content-Length: " + body.length + "\\r\\n\\r\\n");
  process.stdout.write(body);
};
process.stdin.on("data", (chunk) => {
  buffer = Buffer.concat([buffer, chunk]);
  for (;;) {
    const head = buffer.indexOf("\\r\\n\\r\\n");
    if (head < 0) return;
    const length = Number(/Content-Length: (\\d+)/i.exec(buffer.subarray(0, head).toString())[1]);
    if (buffer.length < head + 4 + length) return;
    const message = JSON.parse(buffer.subarray(head + 4, head + 4 + length).toString());
    buffer = buffer.subarray(head + 4 + length);
    receive(message);
  }
});
function receive(message) {
  if (message.method === "initialize") {
    seen.initializationOptions = message.params.initializationOptions ?? null;
    seen.GOTOOLCHAIN = process.env.GOTOOLCHAIN ?? null;
    seen.initialize = message.id;
    send({ id: "config", method: "workspace/configuration", params: { items: [{ section: "rust-analyzer" }, { section: "other" }] } });
  } else if (message.id === "config") {
    seen.configuration = message.result;
    fs.writeFileSync("seen.json", JSON.stringify(seen));
    send({ id: seen.initialize, result: { capabilities: {} } });
  } else if (message.method === "textDocument/didOpen" || message.method === "textDocument/didChange") {
    const { uri, version } = message.params.textDocument;
    send({ method: "textDocument/publishDiagnostics", params: { uri, version, diagnostics: [] } });
  } else if (message.method === "shutdown") {
    send({ id: message.id, result: null });
  } else if (message.method === "exit") {
    process.exit(0);
  }
}
`;

/**
 * The built-in spec of `name`, run as the recording server with the options the table gives the
 * real one (found on a PATH holding only a stand-in of that name, installed here or not).
 */
async function recording(name: string): Promise<LanguageServerSpec> {
  const spec = LANGUAGE_SERVERS.find((candidate) => candidate.name === name)!;
  const bin = await mkdtemp(path.join(os.tmpdir(), "spark-fake-path-"));
  await writeFile(path.join(bin, name), "#!/bin/sh\nexit 1\n", { mode: 0o755 });
  const saved = process.env.PATH;
  process.env.PATH = bin;
  let real: ReturnType<LanguageServerSpec["command"]>;
  try {
    real = spec.command();
  } finally {
    process.env.PATH = saved;
  }
  if (typeof real === "string") throw new Error(real);
  const { file: _file, args: _args, ...options } = real;
  return { ...spec, command: () => ({ file: process.execPath, args: ["-e", RECORDING_SERVER], ...options }) };
}

async function check(spec: LanguageServerSpec, file: string, projectTrusted: boolean) {
  const t = await tempWorkspace({ files: { [file]: "fn main() {}\n" } });
  const diagnostics = new EditDiagnostics({
    root: t.dir,
    sandbox: new CommandSandbox(),
    servers: [spec],
    budgetMs: 30_000,
    startBudgetMs: 60_000,
    projectTrusted: async () => projectTrusted,
  });
  try {
    const report = await diagnostics.check([
      { path: file, absolute: path.join(t.dir, file), before: "fn main() {}\n", after: "fn main() { }\n" },
    ]);
    const seen = await readFile(path.join(t.dir, "seen.json"), "utf8").then(JSON.parse, () => null);
    return { report, seen };
  } finally {
    await diagnostics.dispose();
    await t[Symbol.asyncDispose]();
  }
}

describe("language servers that run a repository's code", () => {
  test("rust-analyzer is not started in an untrusted project: a notice says why and how", async () => {
    const { report, seen } = await check(await recording("rust-analyzer"), "src/main.rs", false);
    expect(seen).toBeNull();
    expect(report.notices).toEqual([
      expect.stringMatching(
        /^Diagnostics: rust-analyzer was not started: cargo and rust-analyzer follow the repository's .*\. It starts in a project you trust \(`spark trust`\); until then no errors are checked for these files\.$/,
      ),
    ]);
  });

  test("rust-analyzer in a trusted project starts with build scripts, proc-macros and check-on-save off", async () => {
    const { report, seen } = await check(await recording("rust-analyzer"), "src/main.rs", true);
    expect(report.notices).toEqual([]);
    expect(RUST_ANALYZER_SETTINGS).toEqual({
      cargo: { buildScripts: { enable: false } },
      procMacro: { enable: false },
      checkOnSave: false,
    });
    // At start, and whenever it asks for its settings (a null would mean its defaults: all on).
    expect(seen.initializationOptions).toEqual(RUST_ANALYZER_SETTINGS);
    expect(seen.configuration).toEqual([RUST_ANALYZER_SETTINGS, null]);
  });

  test("gopls runs without trust, and never fetches the toolchain a go.mod names", async () => {
    const { report, seen } = await check(await recording("gopls"), "main.go", false);
    expect(report.notices).toEqual([]);
    expect(seen).toMatchObject({ GOTOOLCHAIN: "local", configuration: [null, null] });
  });

  test("only rust-analyzer waits for trust among the built-in servers", () => {
    expect(LANGUAGE_SERVERS.filter((spec) => spec.runsProjectCode).map((spec) => spec.name)).toEqual([
      "rust-analyzer",
    ]);
  });
});
