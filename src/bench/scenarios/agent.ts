import { discoverAgentsFiles } from "../../agent/agents-md.js";
import { requestSettings } from "../../agent/request-settings.js";
import { buildSystemPrompt } from "../../agent/system-prompt.js";
import { toolsFor } from "../../agent/tools/index.js";
import { physicalCoreCount } from "../../engine/llama/internal/physical-cores.js";
import { type BenchRow, infoRow, row } from "../bench-report.js";
import { BenchSocket } from "../internal/bench-socket.js";
import { streamChat } from "../internal/chat-stream.js";
import type { LlamaServerLookup } from "../internal/llama-server-binary.js";
import { PeerServer } from "../internal/peer-server.js";
import { ServerProcess } from "../internal/server-process.js";
import { median } from "../internal/stats.js";

export interface AgentModel {
  /** How the table names it, e.g. "135M shape". */
  label: string;
  path: string;
  /**
   * Synthetic random weights: the rows compare speed on the same request, but the model does not
   * really answer or edit (nor copy the file, so drafts from it are rarely accepted).
   */
  randomWeights: boolean;
  /** Output tokens of the plain answer. */
  answerTokens: number;
  /** Output tokens of the edit. */
  editTokens: number;
}

export interface AgentOptions {
  models: AgentModel[];
  /** `findLlamaServer()`: without a binary the rows against llama-server are left out, with a line saying so. */
  llamaServer: LlamaServerLookup;
  /** Lines of the file the edit copies. `spark bench`: 150. */
  fileLines: number;
  /** Measured requests of each kind on each side; the median is reported. */
  runs: number;
  /** Tokens per conversation on both servers. */
  contextSize: number;
  log: (line: string) => void;
}

/**
 * llama-server's own configuration for an agent: the model's chat template with the tools
 * (`--jinja`) and its default speculation (`--spec-default`: ngram-mod, drafts from n-grams of
 * the token history, prompt included, 48 to 64 tokens long).
 */
const LLAMA_SERVER_AGENT_ARGS = ["--jinja", "--spec-default"];
/** A response may spend minutes evaluating a long prompt on a slow CPU before its first event. */
const RESPONSE_TIMEOUT_MS = 600_000;
const OUTPUT_DELTAS = new Set([
  "response.output_text.delta",
  "response.function_call_arguments.delta",
  "response.reasoning_text.delta",
]);
const EDITED_PATH = "src/inventory.ts";

/** One request of the agent's conversation, as the agent sends it (instructions and tools apart). */
interface AgentRequest {
  /** The person's message. */
  task: string;
  /** A `read_file` call and its output after the message: the file the edit copies. */
  read?: { callId: string; output: string };
  maxTokens: number;
}

interface Run {
  ttftMs: number;
  /** Output tokens after the first over the time from the first output to the last (see `rate`). */
  tokensPerSecond: number;
  outputTokens: number;
  promptTokens: number;
  /** Prompt tokens whose KV state was reused rather than evaluated. */
  cachedTokens: number;
  /** Draft tokens that became output, and how many were drafted (undefined where not reported). */
  accepted: number;
  drafted: number | undefined;
}

type SideName = "tools" | "no tools" | "no tools, same length" | "llama-server";
type Kind = "answer" | "edit";

interface Side {
  name: SideName;
  send: (request: AgentRequest) => Promise<Run>;
}

/**
 * The agent's own requests: its real system prompt and tool definitions, a plain answer to a
 * question and an edit that copies most of a file it has just read, greedy with fixed output
 * lengths. Spark with the tools (the agent's request: tools also turn on prompt lookup) against
 * the same request without them, and against llama-server on the same GGUF with the same tools
 * (`--jinja`) and its own n-gram speculation. Decode tokens/s and time to first token, client-side;
 * each side's instructions and tools are evaluated before its measured requests (as the agent's
 * pre-warm does), and the sides take turns (A B C, C B A).
 */
export async function agentScenario(options: AgentOptions): Promise<BenchRow[]> {
  const instructions = buildSystemPrompt(process.cwd(), await discoverAgentsFiles(process.cwd()));
  const withTools = requestSettings({ model: "", instructions, tools: toolsFor(), temperature: 0 });
  const withoutTools = { ...withTools, tools: [] };
  // The tools' definitions are most of the agent's prompt (2.4k tokens of its 2.7k on the 135M
  // shape), and every decode step attends to them: this side carries the same definitions as text,
  // so it isolates what offering tools costs a step (the lazy grammar, prompt lookup) from what a
  // longer context costs.
  const sameLength = {
    ...withoutTools,
    instructions: `${instructions}\n\n# Tools\n\n${withTools.tools.map((tool) => JSON.stringify(tool)).join("\n")}`,
  };
  const chatTools = withTools.tools.map(({ name, description, parameters }) => ({
    type: "function",
    function: { name, description, parameters },
  }));
  const file = numbered(inventoryFile(options.fileLines));
  const peerBin = "binary" in options.llamaServer ? options.llamaServer.binary : undefined;
  if ("missing" in options.llamaServer) {
    options.log(`agent: rows against llama-server left out: ${options.llamaServer.missing}`);
  }
  const threads = physicalCoreCount();
  const rows: BenchRow[] = [];
  for (const model of options.models) {
    options.log(`agent: ${model.label}, ${model.path}`);
    await using spark = await ServerProcess.start([
      ...["--model", model.path, "--ctx-size", String(options.contextSize)],
      ...["--parallel", "1", "--threads", String(threads)],
    ]);
    await using peer = peerBin
      ? await PeerServer.start({
          binary: peerBin,
          modelPath: model.path,
          contextSize: options.contextSize,
          threads,
          extraArgs: LLAMA_SERVER_AGENT_ARGS,
        })
      : undefined;
    await using socket = await BenchSocket.open(`${spark.baseUrl.replace(/^http/, "ws")}/responses`);
    const sides: Side[] = [
      { name: "tools", send: (request) => sparkRun(socket, { ...withTools, ...responsesInput(request) }) },
      {
        name: "no tools",
        send: (request) => sparkRun(socket, { ...withoutTools, ...responsesInput(request) }),
      },
      {
        name: "no tools, same length",
        send: (request) => sparkRun(socket, { ...sameLength, ...responsesInput(request) }),
      },
    ];
    if (peer) {
      sides.push({
        name: "llama-server",
        send: (request) =>
          llamaServerRun(peer.baseUrl, {
            messages: [{ role: "system", content: instructions }, ...chatMessages(request)],
            tools: chatTools,
            max_tokens: request.maxTokens,
            temperature: 0,
          }),
      });
    }
    const runs = new Map(sides.map((side) => [side.name, { answer: [] as Run[], edit: [] as Run[] }]));
    for (let i = 0; i < options.runs; i++) {
      // New past the instructions and tools, as each of the agent's turns is; the same on every side.
      const ticket = 3 * i;
      for (const side of i % 2 === 0 ? sides : [...sides].reverse()) {
        await side.send({ task: `Ticket ${ticket + 1}: say hello.`, maxTokens: 1 });
        runs.get(side.name)!.answer.push(
          await side.send({
            task: `Ticket ${ticket + 2}: what is the difference between a process and a thread? Answer in a few sentences.`,
            maxTokens: model.answerTokens,
          }),
        );
        runs.get(side.name)!.edit.push(
          await side.send({
            task: `Ticket ${ticket + 3}: in ${EDITED_PATH}, rename the field \`quantity\` to \`count\` everywhere. Then show me the whole updated file.`,
            read: { callId: `call_${ticket + 3}`, output: file },
            maxTokens: model.editTokens,
          }),
        );
      }
      options.log(
        `agent ${model.label} run ${i + 1}/${options.runs}: ${sides
          .map((side) => {
            const { answer, edit } = runs.get(side.name)!;
            return `${side.name} ${answer.at(-1)!.tokensPerSecond.toFixed(1)} / ${edit.at(-1)!.tokensPerSecond.toFixed(1)} tok/s`;
          })
          .join(", ")} (answer / edit)`,
      );
    }
    rows.push(...modelRows(model, runs, options));
  }
  return rows;
}

function modelRows(
  model: AgentModel,
  runs: Map<SideName, Record<Kind, Run[]>>,
  options: AgentOptions,
): BenchRow[] {
  const weights = model.randomWeights ? "random weights" : "trained";
  const rows: BenchRow[] = [];
  const decode = (list: Run[]) => median(list.map((run) => run.tokensPerSecond).filter(Number.isFinite));
  const ttft = (list: Run[]) => median(list.map((run) => run.ttftMs));
  for (const kind of ["answer", "edit"] as const) {
    const what = kind === "answer" ? "plain answer" : `edit copying a ${options.fileLines}-line file`;
    const tools = runs.get("tools")![kind];
    const plain = runs.get("no tools")![kind];
    const sameLength = runs.get("no tools, same length")![kind];
    const peer = runs.get("llama-server")?.[kind];
    const where = `${what}, ${model.label} (${weights})`;
    const medianOf = `greedy, median of ${options.runs}`;
    rows.push(
      row(
        {
          scenario: "agent",
          metric: `${where}: decode tokens/s, with the agent's tools vs without, the same prompt length (their definitions as text)`,
          value: decode(tools),
          baseline: decode(sameLength),
          unit: "tok/s",
          target: ">= 0.95x",
          detail: `what offering tools costs a decode step (lazy grammar, prompt lookup): with tools ${describe(tools)}; without ${describe(sameLength)}; ${medianOf}`,
        },
        (ratio) => ratio >= 0.95,
      ),
      infoRow({
        scenario: "agent",
        metric: `${where}: decode tokens/s, with the agent's tools vs the same request without`,
        value: decode(tools),
        baseline: decode(plain),
        unit: "tok/s",
        detail: `a step attends to the tools' definitions too: with tools ${describe(tools)}; without ${describe(plain)}; ${medianOf}`,
      }),
      infoRow({
        scenario: "agent",
        metric: `${where}: time to first token, with the agent's tools vs without`,
        value: ttft(tools),
        baseline: ttft(plain),
        unit: "ms",
        detail: `instructions and tools evaluated before (pre-warm), the ${kind === "answer" ? "question" : "file"} not: with tools ${describe(tools)}; without ${describe(plain)}; ${medianOf}`,
      }),
    );
    if (!peer) continue;
    const vs = `Spark vs llama-server, same GGUF, threads and tools (--jinja${kind === "edit" ? "; its n-gram speculation, --spec-default" : ""})`;
    const differ = promptsDiffer(tools, plain, peer);
    // A claim holds only for the same prompt on both; otherwise the row is for context.
    const claim = (fields: Omit<BenchRow, "ratio" | "holds">, holds: (ratio: number) => boolean) =>
      differ ? infoRow({ ...fields, detail: `${fields.detail}; ${differ}` }) : row(fields, holds);
    rows.push(
      claim(
        {
          scenario: "agent",
          metric: `${where}: decode tokens/s, ${vs}`,
          value: decode(tools),
          baseline: decode(peer),
          unit: "tok/s",
          target: ">= 1.0x",
          detail: `Spark ${describe(tools)}; llama-server ${describe(peer)}; ${medianOf}`,
        },
        (ratio) => ratio >= 1,
      ),
      claim(
        {
          scenario: "agent",
          metric: `${where}: time to first token, ${vs}`,
          value: ttft(tools),
          baseline: ttft(peer),
          unit: "ms",
          target: "<= 1.0x",
          detail: `instructions and tools evaluated before, the ${kind === "answer" ? "question" : "file"} not: Spark ${describe(tools)}; llama-server ${describe(peer)}; ${medianOf}`,
        },
        (ratio) => ratio <= 1,
      ),
    );
  }
  return rows;
}

/**
 * Why Spark's and llama-server's prompts are not the same request (more than 5% apart in tokens),
 * or undefined when they are. A chat template without tool support (SmolLM2's) is rendered by
 * llama-server without the tools, while Spark still offers them.
 */
function promptsDiffer(spark: Run[], sparkWithout: Run[], peer: Run[]): string | undefined {
  const [ours, without, theirs] = [spark, sparkWithout, peer].map((list) => list.at(-1)!.promptTokens) as [
    number,
    number,
    number,
  ];
  const near = (a: number, b: number) => Math.abs(a - b) <= 0.05 * Math.max(a, b);
  if (near(ours, theirs)) return undefined;
  const why = near(without, theirs)
    ? "llama-server's prompt is the size of Spark's without tools: its rendering of this chat template left the tools out"
    : "the two render this conversation differently";
  return `not the same prompt (Spark ${ours} tokens, llama-server ${theirs}): ${why}`;
}

/** The last run's token counts, e.g. "128 output tokens, 40 of 52 drafted tokens accepted, 2300-token prompt (2250 cached)". */
function describe(list: Run[]): string {
  const run = list.at(-1)!;
  const drafts =
    run.drafted === 0
      ? "no drafts"
      : run.drafted === undefined
        ? `${run.accepted} drafted tokens accepted`
        : `${run.accepted} of ${run.drafted} drafted tokens accepted`;
  // A rate needs two tokens apart in time; a model that ends at once (a random one may) has none.
  const untimed = !Number.isNaN(run.tokensPerSecond)
    ? ""
    : run.outputTokens >= 2
      ? " (arrived at once: not timed)"
      : " (too few to time: not timed)";
  return `${run.outputTokens} output tokens${untimed}, ${drafts}, ${run.promptTokens}-token prompt (${run.cachedTokens} cached)`;
}

function responsesInput(request: AgentRequest) {
  return {
    input: [
      { role: "user" as const, content: request.task },
      ...(request.read
        ? [
            {
              type: "function_call" as const,
              call_id: request.read.callId,
              name: "read_file",
              arguments: JSON.stringify({ path: EDITED_PATH }),
            },
            {
              type: "function_call_output" as const,
              call_id: request.read.callId,
              output: request.read.output,
            },
          ]
        : []),
    ],
    max_output_tokens: request.maxTokens,
    store: false,
  };
}

function chatMessages(request: AgentRequest): Record<string, unknown>[] {
  const messages: Record<string, unknown>[] = [{ role: "user", content: request.task }];
  if (request.read) {
    messages.push(
      {
        role: "assistant",
        content: "",
        tool_calls: [
          {
            id: request.read.callId,
            type: "function",
            function: { name: "read_file", arguments: JSON.stringify({ path: EDITED_PATH }) },
          },
        ],
      },
      { role: "tool", tool_call_id: request.read.callId, content: request.read.output },
    );
  }
  return messages;
}

/** One response over Spark's Responses WebSocket, as the agent's client sends it. */
async function sparkRun(socket: BenchSocket, body: Record<string, unknown>): Promise<Run> {
  const sentAt = socket.send({ type: "response.create", ...body });
  let firstAt = 0;
  let lastAt = 0;
  for (;;) {
    const { event, at } = await socket.next(RESPONSE_TIMEOUT_MS);
    if (OUTPUT_DELTAS.has(event.type)) {
      if (firstAt === 0) firstAt = at;
      lastAt = at;
    }
    if (event.type === "error" || event.type === "response.failed") {
      throw new Error(`bench: ${JSON.stringify(event).slice(0, 1000)}`);
    }
    if (event.type === "response.completed" || event.type === "response.incomplete") {
      const usage = (event.response as { usage: SparkUsage }).usage;
      const outputTokens = usage.output_tokens;
      return {
        ttftMs: (firstAt || at) - sentAt,
        tokensPerSecond: rate(outputTokens, firstAt, lastAt),
        outputTokens,
        promptTokens: usage.input_tokens,
        cachedTokens: usage.input_tokens_details.cached_tokens,
        accepted: usage.output_tokens_details.accepted_prediction_tokens,
        drafted:
          usage.output_tokens_details.accepted_prediction_tokens +
          usage.output_tokens_details.rejected_prediction_tokens,
      };
    }
  }
}

interface SparkUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { accepted_prediction_tokens: number; rejected_prediction_tokens: number };
}

async function llamaServerRun(baseUrl: string, body: Record<string, unknown>): Promise<Run> {
  const streamed = await streamChat(baseUrl, body);
  return {
    ttftMs: streamed.firstAt - streamed.sentAt,
    tokensPerSecond: rate(streamed.tokens, streamed.firstAt, streamed.lastAt),
    outputTokens: streamed.tokens,
    promptTokens: streamed.promptTokens,
    cachedTokens: streamed.cachedTokens,
    accepted: streamed.timings?.draft_n_accepted ?? 0,
    drafted: streamed.timings?.draft_n,
  };
}

/**
 * Decode tokens/s between the first and the last output's arrival; NaN with fewer than 2 tokens or
 * when all of them arrived within a millisecond (in one read), too fast to time from the client.
 */
function rate(tokens: number, firstAt: number, lastAt: number): number {
  return tokens >= 2 && lastAt - firstAt >= 1 ? ((tokens - 1) * 1000) / (lastAt - firstAt) : Number.NaN;
}

/** `read_file`'s output: each line after its 1-based number and a tab. */
function numbered(text: string): string {
  const lines = text.split("\n");
  const width = String(lines.length).length;
  return lines.map((line, i) => `${String(i + 1).padStart(width)}\t${line}`).join("\n");
}

const GOODS = ["apples", "bolts", "cables", "drills", "envelopes", "filters", "gloves", "hinges"];

/** A plain TypeScript module of `lines` lines: small functions over stock items, three shapes in turn. */
function inventoryFile(lines: number): string {
  const out = [
    'import { readFile } from "node:fs/promises";',
    "",
    "export interface Item {",
    "  sku: string;",
    "  name: string;",
    "  price: number;",
    "  quantity: number;",
    "}",
    "",
  ];
  for (let i = 0; out.length < lines; i++) {
    const goods = GOODS[i % GOODS.length]!;
    const name = `${goods[0]!.toUpperCase()}${goods.slice(1)}${i < GOODS.length ? "" : Math.floor(i / GOODS.length) + 1}`;
    if (i % 3 === 0) {
      out.push(
        `/** The value of the ${goods} in stock. */`,
        `export function valueOf${name}(items: Item[]): number {`,
        "  let total = 0;",
        `  for (const item of items) if (item.name === "${goods}") total += item.price * item.quantity;`,
        "  return total;",
        "}",
        "",
      );
    } else if (i % 3 === 1) {
      out.push(
        `/** Whether fewer than \`minimum\` ${goods} are left. */`,
        `export function needs${name}(items: Item[], minimum = ${(i % 7) + 3}): boolean {`,
        `  const left = items.filter((item) => item.name === "${goods}").reduce((sum, item) => sum + item.quantity, 0);`,
        "  return left < minimum;",
        "}",
        "",
      );
    } else {
      out.push(
        `/** Reads the ${goods} from a JSON file of items. */`,
        `export async function load${name}(file: string): Promise<Item[]> {`,
        `  const items = JSON.parse(await readFile(file, "utf8")) as Item[];`,
        `  return items.filter((item) => item.name === "${goods}" && item.quantity > 0);`,
        "}",
        "",
      );
    }
  }
  return out.slice(0, lines).join("\n");
}
