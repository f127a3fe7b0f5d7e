import { execFileSync } from "node:child_process";
import { access, mkdir, mkdtemp, readFile, realpath, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { trustProject } from "../../config/project-trust.js";
import {
  type SparkServeProcess,
  startSparkServe,
} from "../../engine/upstream/test-support/spark-serve-process.js";
import type { ScriptFileEntry } from "../test-support/scripted-script.js";
import { testEngineEnv } from "../test-support/test-engine.js";
import { scriptedAcpEnv } from "./test-support/acp-test-env.js";
import {
  type AcpxMessage,
  type AcpxRun,
  acpxMissing,
  acpxOwnersGone,
  answerTo,
  chunkText,
  cleanUpAcpx,
  runAcpx,
  updates,
} from "./test-support/acpx.js";

/**
 * What an editor asks of an ACP agent beyond prompts, asked by a real ACP client (acpx, from npm;
 * test-support/acpx.ts): the slash commands it advertises, its mode and model switched through
 * session config options (`acpx set mode plan`, `acpx set model deep`), and the MCP servers the
 * client passes in session/new (`acpx --mcp-config FILE`).
 */

if (acpxMissing) console.log(`skipped: ${acpxMissing}`);

const EVERYTHING = path.resolve("node_modules/@modelcontextprotocol/server-everything/dist/index.js");

/** The starting tier's (fast's) replies. */
const script: ScriptFileEntry[] = [
  { match: "add them", toolCalls: [{ name: "mcp__everything__get-sum", arguments: '{"a":40,"b":2}' }] },
  {
    match: "write it",
    toolCalls: [{ name: "shell", arguments: JSON.stringify({ command: "echo hi > written.txt" }) }],
  },
  { text: "Answered by fast." },
];

let repo: string;
let scratch: string;
let env: NodeJS.ProcessEnv;
/** The second tier, deep: a `spark serve` of its own (scripted), reached as an upstream engine. */
let deep: SparkServeProcess;

const acpx = (args: string[]): Promise<AcpxRun> => runAcpx(args, { cwd: repo, env });

/**
 * Waits for the queue owner (and its spark acp) a prompt left behind to end (after --ttl): acpx
 * refuses a command that reaches an owner as it shuts down ("Queue owner is shutting down").
 */
const settled = (): Promise<void> => acpxOwnersGone(env.HOME!);

/** acpx's own result object (`{action: ...}`) of a run of one of its commands. */
function result(run: AcpxRun): AcpxMessage | undefined {
  return run.messages.find((message) => message.action !== undefined);
}

/** The error acpx printed for a run that failed. */
function failure(run: AcpxRun): string {
  return run.messages.find((message) => message.error)?.error?.message ?? "";
}

/** What a failed run said: acpx's error, and its stderr. */
function why(run: AcpxRun): string {
  return `${failure(run)}\n${run.stderr}`;
}

/** An acpx config file naming `servers` as its MCP servers (what acpx passes in session/new). */
async function mcpConfig(name: string, servers: unknown[]): Promise<string> {
  const file = path.join(scratch, `${name}.json`);
  await writeFile(file, JSON.stringify({ mcpServers: servers }));
  return file;
}

const exists = (file: string) =>
  access(file).then(
    () => true,
    () => false,
  );

/** Option `id` as Spark last told it in a run: in an answer's or an update's configOptions. */
function lastOption(run: AcpxRun, id: string): Record<string, unknown> | undefined {
  const lists = run.messages.flatMap((message) => {
    const list = message.result?.configOptions ?? message.params?.update?.configOptions;
    return Array.isArray(list) ? [list as Record<string, unknown>[]] : [];
  });
  return lists.at(-1)?.find((option) => option.id === id);
}

/** The last update of each tool call of a run that ended it. */
function finishedCalls(run: AcpxRun): Record<string, unknown>[] {
  return updates(run, "tool_call_update").filter(
    (update) => update.status === "completed" || update.status === "failed",
  );
}

describe.skipIf(acpxMissing !== undefined)(
  "spark acp's commands, options and editor MCP servers, as acpx uses them",
  () => {
    beforeAll(async () => {
      repo = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-acpx-options-")));
      execFileSync("git", ["init", "-q"], { cwd: repo });
      scratch = await mkdtemp(path.join(os.tmpdir(), "spark-acpx-options-state-"));
      const home = path.join(scratch, "home");
      await mkdir(home);
      const deepScript = path.join(scratch, "deep-script.json");
      await writeFile(deepScript, JSON.stringify([{ text: "Answered by deep." }]));
      await mkdir(path.join(scratch, "deep-config"));
      deep = await startSparkServe([], {
        ...testEngineEnv({ script: deepScript }),
        XDG_CONFIG_HOME: path.join(scratch, "deep-config"),
      });
      env = { ...(await scriptedAcpEnv(scratch, script)), HOME: home };
      await writeFile(
        path.join(scratch, "config", "spark", "config.toml"),
        `default_tier = "fast"\n[diagnostics]\nenabled = false\n[tiers.fast]\nengine = "llama"\n[tiers.deep]\nengine = "upstream"\nurl = "${deep.url}"\nmodel = "scripted"\n`,
      );
      // The editor's MCP servers start only in a trusted workspace, as a project's do.
      await trustProject(repo, { env });
    });

    afterAll(async () => {
      if (env?.HOME) await cleanUpAcpx(env.HOME);
      await deep?.[Symbol.asyncDispose]();
    });

    test("acpx sees Spark's slash commands advertised once session/new's answer went out (before, a client that learns of the session from the answer dropped them)", async () => {
      const run = await acpx(["exec", "hello there"]);
      expect(run.code, why(run)).toBe(0);
      const advertised = run.messages.filter(
        (message) => message.params?.update?.sessionUpdate === "available_commands_update",
      );
      expect(advertised).toHaveLength(1);
      const names = (advertised[0]!.params!.update!.availableCommands as { name: string }[]).map(
        (command) => command.name,
      );
      expect(names).toEqual(expect.arrayContaining(["mode", "model", "undo", "compact"]));
      const answered = run.messages.indexOf(answerTo(run, "session/new")!);
      expect(answered).toBeGreaterThan(-1);
      expect(run.messages.indexOf(advertised[0]!)).toBeGreaterThan(answered);
    });

    test("`acpx set mode plan` (a config option) takes effect: the write is refused; `set mode default` lets it run", async () => {
      const created = await acpx(["sessions", "new", "--name", "modes"]);
      expect(created.code, why(created)).toBe(0);

      const planned = await acpx(["set", "-s", "modes", "mode", "plan"]);
      expect(planned.code, why(planned)).toBe(0);
      expect(result(planned)).toMatchObject({ action: "config_set", configId: "mode", value: "plan" });
      expect(result(planned)?.configOptions).toContainEqual(
        expect.objectContaining({ id: "mode", currentValue: "plan" }),
      );

      const refused = await acpx(["--approve-all", "prompt", "-s", "modes", "write it"]);
      expect(refused.code, why(refused)).toBe(0);
      // Refused by plan mode itself, not by the person: nothing was asked.
      expect(refused.messages.some((message) => message.method === "session/request_permission")).toBe(false);
      expect(finishedCalls(refused).at(-1)).toMatchObject({
        status: "failed",
        rawOutput: expect.stringContaining("plan mode is on"),
      });
      expect(await exists(path.join(repo, "written.txt"))).toBe(false);

      await settled();
      const unplanned = await acpx(["set", "-s", "modes", "mode", "default"]);
      expect(unplanned.code, why(unplanned)).toBe(0);
      const written = await acpx(["--approve-all", "prompt", "-s", "modes", "write it"]);
      expect(written.code, why(written)).toBe(0);
      expect(finishedCalls(written).at(-1)).toMatchObject({ status: "completed" });
      expect(await readFile(path.join(repo, "written.txt"), "utf8")).toBe("hi\n");
    }, 180_000);

    test("`acpx set model deep` (a config option): the next reply comes from deep, and the options say so", async () => {
      const created = await acpx(["sessions", "new", "--name", "models"]);
      expect(created.code, why(created)).toBe(0);
      const switched = await acpx(["set", "-s", "models", "model", "deep"]);
      expect(switched.code, why(switched)).toBe(0);
      expect(result(switched)).toMatchObject({ action: "model_set", modelId: "deep" });

      const asked = await acpx(["prompt", "-s", "models", "hello there"]);
      expect(asked.code, why(asked)).toBe(0);
      expect(chunkText(asked, "agent_message_chunk")).toBe("Answered by deep.");
      // The model option, as Spark last told acpx (an answer or a config_option_update), is deep.
      expect(lastOption(asked, "model")).toMatchObject({ currentValue: "deep" });

      await settled();
      const shown = await acpx(["status", "-s", "models"]);
      expect(result(shown)).toMatchObject({ model: "deep", availableModels: ["fast", "deep"] });
    }, 180_000);

    test("a bad value or option is refused with Spark's error, which acpx shows and exits non-zero on", async () => {
      const created = await acpx(["sessions", "new", "--name", "refusals"]);
      expect(created.code, why(created)).toBe(0);

      const mode = await acpx(["set", "-s", "refusals", "mode", "yolo"]);
      expect(mode.code).not.toBe(0);
      expect(failure(mode)).toMatch(/Unknown mode yolo: one of default, plan/);

      const option = await acpx(["set", "-s", "refusals", "effort", "high"]);
      expect(option.code).not.toBe(0);
      expect(failure(option)).toMatch(/Unknown option effort: Spark's are mode and model/);

      // acpx checks a model against the options Spark offered before it asks.
      const model = await acpx(["set", "-s", "refusals", "model", "huge"]);
      expect(model.code).not.toBe(0);
      expect(failure(model)).toMatch(/huge.*Available models: fast, deep/);
    }, 180_000);

    test("--mcp-config: the server acpx passes in session/new is started, and its tool called after approval", async () => {
      const config = await mcpConfig("everything", [
        { name: "Everything", command: process.execPath, args: [EVERYTHING, "stdio"] },
      ]);
      const run = await acpx(["--approve-all", "--mcp-config", config, "exec", "add them"]);
      expect(run.code, why(run)).toBe(0);
      const opened = run.messages.find((message) => message.method === "session/new");
      expect(opened?.params?.mcpServers).toEqual([expect.objectContaining({ name: "Everything" })]);
      const asked = run.messages.find((message) => message.method === "session/request_permission");
      expect(asked?.params).toMatchObject({ toolCall: { title: "everything · get-sum" } });
      // The call keeps that name in every update of it.
      const titles = [...updates(run, "tool_call"), ...updates(run, "tool_call_update")].flatMap((update) =>
        update.title === undefined ? [] : [update.title],
      );
      expect(new Set(titles)).toEqual(new Set(["everything · get-sum"]));
      // The server's own answer: it added the numbers.
      expect(finishedCalls(run).at(-1)).toMatchObject({
        status: "completed",
        rawOutput: "The sum of 40 and 2 is 42.",
      });
      expect(chunkText(run, "agent_message_chunk")).toBe("Answered by fast.");
    });

    test("--mcp-config on a named session: its first prompt calls the tool; a later prompt continues the saved session, which takes no servers, and acpx is told so (before, they were dropped without a word)", async () => {
      const config = await mcpConfig("named", [
        { name: "Everything", command: process.execPath, args: [EVERYTHING, "stdio"] },
      ]);
      const created = await acpx(["sessions", "new", "--name", "tools"]);
      expect(created.code, why(created)).toBe(0);
      const first = await acpx([
        "--approve-all",
        "--mcp-config",
        config,
        "prompt",
        "-s",
        "tools",
        "add them",
      ]);
      expect(first.code, why(first)).toBe(0);
      expect(finishedCalls(first).at(-1)).toMatchObject({
        status: "completed",
        rawOutput: "The sum of 40 and 2 is 42.",
      });

      await settled();
      const later = await acpx([
        "--approve-all",
        "--mcp-config",
        config,
        "prompt",
        "-s",
        "tools",
        "add them",
      ]);
      expect(later.code, why(later)).toBe(0);
      const resumed = later.messages.find((message) => message.method === "session/resume");
      expect(resumed?.params?.mcpServers).toEqual([expect.objectContaining({ name: "Everything" })]);
      expect(chunkText(later, "agent_message_chunk")).toContain(
        "_The editor's MCP servers (Everything) are not used in a saved session Spark continues: they join new sessions only._",
      );
      expect(finishedCalls(later).at(-1)).toMatchObject({
        status: "failed",
        rawOutput: expect.stringMatching(/Unknown tool 'mcp__everything__get-sum'/),
      });
    }, 180_000);

    test("--mcp-config with a server that dies at start and one that cannot start: acpx is told (before, the notices never left the thread), the session works, their tools absent", async () => {
      const config = await mcpConfig("dead", [
        { name: "gone", command: process.execPath, args: ["-e", "process.exit(3)"] },
        { name: "nowhere", command: path.join(scratch, "no-such-server") },
      ]);
      const run = await acpx(["--approve-all", "--mcp-config", config, "exec", "add them"]);
      expect(run.code, why(run)).toBe(0);
      const said = chunkText(run, "agent_message_chunk");
      expect(said).toMatch(/MCP server gone failed/);
      expect(said).toMatch(/MCP server nowhere failed: .*ENOENT/);
      expect(finishedCalls(run).at(-1)).toMatchObject({
        status: "failed",
        rawOutput: expect.stringMatching(/Unknown tool 'mcp__everything__get-sum'/),
      });
      expect(said).toContain("Answered by fast.");
      expect(answerTo(run, "session/prompt")?.result).toEqual({ stopReason: "end_turn" });
    });

    test("--mcp-config in a workspace not trusted: acpx is told its servers are not used and why (before, nothing said so), and none starts", async () => {
      const untrusted = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-acpx-untrusted-")));
      execFileSync("git", ["init", "-q"], { cwd: untrusted });
      const config = await mcpConfig("untrusted", [
        { name: "Everything", command: process.execPath, args: [EVERYTHING, "stdio"] },
      ]);
      const run = await runAcpx(["--approve-all", "--mcp-config", config, "exec", "add them"], {
        cwd: untrusted,
        env,
      });
      expect(run.code, why(run)).toBe(0);
      expect(chunkText(run, "agent_message_chunk")).toMatch(
        /The editor's MCP servers \(everything\) are not used: this workspace is not trusted. Run spark trust in it to use them./,
      );
      expect(run.messages.some((message) => message.method === "session/request_permission")).toBe(false);
      expect(finishedCalls(run).at(-1)).toMatchObject({
        status: "failed",
        rawOutput: expect.stringMatching(/Unknown tool 'mcp__everything__get-sum'/),
      });
    });
  },
);
