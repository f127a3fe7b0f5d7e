import type { ChatMessage, ToolCall } from "../../protocol/chat.js";
import type {
  DraftRequest,
  DraftResult,
  Engine,
  EngineEvent,
  EngineInfo,
  GenerateOptions,
  GenerateRequest,
  StopReason,
} from "../engine.js";

/**
 * What the scripted model answers to one request: reasoning first, then text, then calls. Each is
 * emitted a scripted token at a time; a call streams as `tool_call_start`, one `tool_call_delta`
 * per token of its arguments, then `tool_call`.
 */
export interface ScriptedReply {
  reasoning?: string;
  text?: string;
  toolCalls?: Omit<ToolCall, "callId">[];
}

export type Script = (request: GenerateRequest, turn: number) => ScriptedReply;

export interface ScriptedEngineOptions {
  /** Model id. Default: `scripted`. */
  id?: string;
  /** The replies. Default: {@link echoScript}. */
  script?: Script | ScriptedReply[];
  /** Emission rate. Default: 0, meaning as fast as possible. */
  tokensPerSecond?: number;
  /** Reported context window. Default: 32768. */
  contextSize?: number;
}

/** Echoes the last user message, so a person trying the scripted engine sees it work. */
export const echoScript: Script = (request) => {
  const lastUser = [...request.messages].reverse().find((m) => m.role === "user");
  return { text: `You said: ${lastUser?.content ?? ""}` };
};

/** Splits text into "tokens": a word with its leading white space. Deterministic and cheap. */
export function scriptedTokens(text: string): string[] {
  return text.match(/\s*\S+|\s+$/g) ?? [];
}

function cutAtStop(text: string, stop: string[] | undefined): string {
  let end = text.length;
  for (const trigger of stop ?? []) {
    const at = text.indexOf(trigger);
    if (at !== -1 && at < end) end = at;
  }
  return text.slice(0, end);
}

/** How many scripted tokens the conversation renders to, and that rendering. */
function renderTokens(messages: ChatMessage[]): string[] {
  const tokens: string[] = [];
  for (const message of messages) {
    tokens.push(`<${message.role}>`);
    // One by one: spreading a huge array into push() overflows the call stack.
    for (const token of scriptedTokens(message.content)) tokens.push(token);
    if (message.role === "assistant") {
      for (const call of message.toolCalls ?? [])
        tokens.push(`<call:${call.name}>`, ...scriptedTokens(call.arguments));
    }
  }
  return tokens;
}

/**
 * A deterministic engine for exact protocol tests and for measuring the server itself: it emits a
 * scripted reply word by word at a fixed rate. It keeps a per-conversation "KV state" of rendered
 * tokens, so cached-token accounting behaves like a real engine's.
 */
export class ScriptedEngine implements Engine {
  readonly info: EngineInfo;
  private readonly script: Script;
  private readonly intervalMs: number;
  private readonly states = new Map<string, string[]>();
  private turn = 0;
  private disposed = false;
  /** Every draft received, in order (tests check what reached the engine). */
  readonly drafts: DraftRequest[] = [];
  private draftWaiters: { index: number; resolve: (draft: DraftRequest) => void }[] = [];

  constructor(options: ScriptedEngineOptions = {}) {
    this.info = {
      id: options.id ?? "scripted",
      engine: "scripted",
      contextSize: options.contextSize ?? 32768,
    };
    const script = options.script ?? echoScript;
    this.script = Array.isArray(script)
      ? (_request, turn) => script[turn % script.length] ?? { text: "" }
      : script;
    const rate = options.tokensPerSecond ?? 0;
    this.intervalMs = rate > 0 ? 1000 / rate : 0;
  }

  async *generate(request: GenerateRequest, options: GenerateOptions = {}): AsyncGenerator<EngineEvent> {
    if (this.disposed) throw new Error("The scripted engine has been disposed.");
    const started = performance.now();
    const signal = options.signal;
    const prompt = renderTokens(request.messages);
    const previous = request.conversation ? (this.states.get(request.conversation) ?? []) : [];
    let cached = 0;
    while (cached < previous.length && cached < prompt.length && previous[cached] === prompt[cached])
      cached++;
    const state = [...prompt];
    if (request.conversation) this.states.set(request.conversation, state);
    const usage = {
      inputTokens: prompt.length,
      cachedInputTokens: cached,
      outputTokens: 0,
      acceptedPredictionTokens: 0,
      rejectedPredictionTokens: 0,
    };
    // A prediction is scored token by token against the reply, so accounting can be tested exactly.
    const predicted = scriptedTokens(request.prediction ?? "");

    if (request.prefillOnly) {
      const elapsed = performance.now() - started;
      yield {
        type: "done",
        result: {
          stopReason: "stop",
          usage,
          timing: { promptMs: elapsed, firstTokenMs: elapsed, decodeMs: 0 },
        },
      };
      return;
    }

    const reply = this.script(request, this.turn++);
    state.push("<assistant>");
    const limit = request.maxOutputTokens ?? Number.POSITIVE_INFINITY;
    let stopReason: StopReason = "stop";
    let firstTokenAt = 0;
    let lastTokenAt = 0;
    const deadline = { next: performance.now() };

    /** Waits for the next token's slot; the reason to stop instead, if any. */
    const next = async (): Promise<StopReason | null> => {
      if (signal?.aborted) return "cancelled";
      if (usage.outputTokens >= limit) return "length";
      await this.pace(deadline, usage.outputTokens);
      return signal?.aborted ? "cancelled" : null;
    };
    /** Counts an output token; `kept` ones stay in the conversation's state (reasoning does not). */
    const emitted = (token: string, kept = true) => {
      usage.outputTokens++;
      if (kept) state.push(token);
      lastTokenAt = performance.now();
      if (firstTokenAt === 0) firstTokenAt = lastTokenAt;
    };

    for (const token of scriptedTokens(reply.reasoning ?? "")) {
      const stop = await next();
      if (stop) {
        stopReason = stop;
        break;
      }
      emitted(token, false);
      yield { type: "reasoning", text: token };
    }

    if (stopReason === "stop") {
      for (const token of scriptedTokens(cutAtStop(reply.text ?? "", request.stop))) {
        const stop = await next();
        if (stop) {
          stopReason = stop;
          break;
        }
        if (predicted[usage.outputTokens] === token) usage.acceptedPredictionTokens++;
        emitted(token);
        yield { type: "text", text: token };
      }
    }

    // Calls are not cut by maxOutputTokens: a started call always completes unless cancelled.
    if (stopReason === "stop" && reply.toolCalls?.length) {
      calls: for (const [index, call] of reply.toolCalls.entries()) {
        if (signal?.aborted) {
          stopReason = "cancelled";
          break;
        }
        const callId = `call_${this.turn}_${index}`;
        emitted(`<call:${call.name}>`);
        yield { type: "tool_call_start", callId, name: call.name };
        for (const token of scriptedTokens(call.arguments)) {
          await this.pace(deadline, usage.outputTokens);
          if (signal?.aborted) {
            stopReason = "cancelled";
            break calls;
          }
          emitted(token);
          yield { type: "tool_call_delta", callId, delta: token };
        }
        yield { type: "tool_call", call: { callId, name: call.name, arguments: call.arguments } };
      }
      if (stopReason === "stop") stopReason = "tool_calls";
    }

    usage.rejectedPredictionTokens = predicted.length - usage.acceptedPredictionTokens;
    const end = performance.now();
    yield {
      type: "done",
      result: {
        stopReason,
        usage,
        timing: {
          promptMs: 0,
          firstTokenMs: (firstTokenAt || end) - started,
          decodeMs: firstTokenAt ? lastTokenAt - firstTokenAt : 0,
        },
      },
    };
  }

  /**
   * Keeps the draft's settled words (all but the one being typed) as the conversation's state, so
   * the next turn's cached-token count shows the draft, as a real engine's would.
   */
  async draft(request: DraftRequest): Promise<DraftResult> {
    if (this.disposed) throw new Error("The scripted engine has been disposed.");
    this.drafts.push(request);
    const index = this.drafts.length - 1;
    this.draftWaiters = this.draftWaiters.filter((waiter) => {
      if (waiter.index !== index) return true;
      waiter.resolve(request);
      return false;
    });
    const words = scriptedTokens(request.text).slice(0, -1);
    const prefix = [...renderTokens(request.messages), "<user>", ...words];
    if (!request.conversation)
      return { outcome: "evaluated", prefixTokens: prefix.length, evaluatedTokens: 0 };
    const held = this.states.get(request.conversation) ?? [];
    let shared = 0;
    while (shared < held.length && shared < prefix.length && held[shared] === prefix[shared]) shared++;
    this.states.set(request.conversation, prefix);
    return { outcome: "evaluated", prefixTokens: prefix.length, evaluatedTokens: prefix.length - shared };
  }

  /** Resolves with the `index`-th draft (0-based) once it has arrived. */
  drafted(index: number): Promise<DraftRequest> {
    const draft = this.drafts[index];
    if (draft) return Promise.resolve(draft);
    return new Promise((resolve) => this.draftWaiters.push({ index, resolve }));
  }

  /**
   * Waits for the next token's slot. Flat out, it still yields to the event loop every 64 tokens
   * so a cancel arriving on the socket is seen.
   */
  private async pace(deadline: { next: number }, emitted: number): Promise<void> {
    if (this.intervalMs === 0) {
      if (emitted % 64 === 63) await new Promise<void>((resolve) => setImmediate(resolve));
      return;
    }
    deadline.next += this.intervalMs;
    const wait = deadline.next - performance.now();
    if (wait > 0) await new Promise<void>((resolve) => setTimeout(resolve, wait));
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    this.states.clear();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }
}
