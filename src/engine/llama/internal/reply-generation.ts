import type { LlamaContextSequence, LlamaGrammarEvaluationState, LlamaModel, Token } from "node-llama-cpp";
import type { ToolChoice, ToolDefinition } from "../../../protocol/chat.js";
import { SparkError } from "../../../protocol/errors.js";
import type { EngineEvent, GenerateRequest, StopReason } from "../../engine.js";
import { outputGrammar, outputRule } from "../output-grammar.js";
import { callGrammar } from "./call-grammar.js";
import { GeneratedText, type RewindPoint } from "./generated-text.js";
import type { GrammarCache } from "./grammar-cache.js";
import { OutputParser } from "./output-parser.js";
import { ReplyEvents } from "./reply-events.js";
import type { FinishedReply } from "./reply-span.js";
import type { Speculation } from "./speculation.js";
import type { TokenDecoder } from "./token-decoder.js";
import type { CallSyntax } from "./tool-call-syntax.js";

export interface ReplyGenerationOptions {
  model: LlamaModel;
  sequence: LlamaContextSequence;
  /** Tokens per conversation: the output ends where the context does. */
  contextSize: number;
  decoder: TokenDecoder;
  grammars: GrammarCache;
  /** Started here, once the request is known to be valid; finished when the reply ends. */
  speculation: Speculation;
  request: GenerateRequest;
  /** The prompt, evaluated up to its last token (generation evaluates that one). */
  prompt: Token[];
  /** Texts that end the assistant's turn, as the model writes them. */
  stopTriggers: string[];
  /** How the model writes function calls. */
  callSyntax: CallSyntax;
  signal?: AbortSignal;
}

/** How a reply ended, what it said, and what its drafts saved. */
export interface Reply extends FinishedReply {
  stopReason: StopReason;
  predictions: { accepted: number; rejected: number };
  firstTokenAt: number;
  lastTokenAt: number;
}

/** After a token: the reply ended, its calls ended, or a call began outside the grammar. */
type Next = "end" | "calls_ended" | RewindPoint;

/**
 * Generates a reply after its prompt was evaluated: streams its text, reasoning and calls as
 * events, and returns how it ended. The call grammar switches on where the model starts a call
 * (a forced call is under it from the first token) and off where the call ends.
 */
export function generateReply(options: ReplyGenerationOptions): AsyncGenerator<EngineEvent, Reply> {
  return new ReplyGeneration(options).run();
}

class ReplyGeneration {
  private readonly tools: ToolDefinition[];
  private readonly choice: ToolChoice;
  private readonly syntax: CallSyntax | null;
  private readonly parser: OutputParser;
  private readonly maxOutput: number;
  private readonly text: GeneratedText;
  private readonly reply = new ReplyEvents();
  private grammar: LlamaGrammarEvaluationState | undefined;
  private stopReason: StopReason = "stop";
  private firstTokenAt = 0;
  private lastTokenAt = 0;

  constructor(private readonly options: ReplyGenerationOptions) {
    const { request, prompt } = options;
    this.tools = request.tools ?? [];
    this.choice = request.toolChoice ?? "auto";
    this.syntax = this.tools.length > 0 ? options.callSyntax : null;
    // Reasoning and message framing are parsed with or without tools; calls only with them.
    this.parser = new OutputParser([...options.stopTriggers, ...(request.stop ?? [])], options.callSyntax, {
      calls: this.syntax !== null,
      tools: this.tools,
    });
    this.maxOutput = Math.min(
      request.maxOutputTokens ?? Number.POSITIVE_INFINITY,
      options.contextSize - prompt.length,
    );
    this.text = new GeneratedText(options.model);
  }

  async *run(): AsyncGenerator<EngineEvent, Reply> {
    const { speculation, prompt, grammars } = this.options;
    const { syntax, choice, parser, reply, tools } = this;
    if (typeof choice === "object" && !tools.some((tool) => tool.name === choice.name)) {
      const message = `tool_choice names '${choice.name}', which is not among the tools.`;
      throw new SparkError("invalid_request", message, { param: "tool_choice" });
    }
    speculation.start(prompt.length);
    if (syntax && choice !== "auto") {
      this.grammar = grammars.state(callGrammar(syntax, tools, { choice, withTrigger: true }));
    } else if (this.options.request.format) {
      // Structured output: the answer is under its grammar from the first token; where tools are
      // offered, a call (from its trigger) is the grammar's other alternative.
      const format = this.options.request.format;
      this.grammar = grammars.state(
        syntax
          ? callGrammar(syntax, tools, { withTrigger: true, or: (rules) => outputRule(rules, format) })
          : outputGrammar(format),
      );
    }
    let evaluation = this.decode(prompt[prompt.length - 1]!, speculation.native ? this.maxOutput : 0);
    for (;;) {
      const next = yield* this.consume(evaluation);
      if (next === "end") break;
      evaluation = next === "calls_ended" ? this.afterCalls() : this.callUnderGrammar(next);
    }
    const stoppedByTrigger = parser.stopped;
    reply.readLast(parser.finish());
    for (const event of reply.take()) yield event;
    if (reply.calls.length > 0 && this.stopReason === "stop") this.stopReason = "tool_calls";
    return {
      stopReason: this.stopReason,
      generated: this.text.tokens,
      text: reply.text,
      calls: reply.calls,
      reasoned: reply.reasoned,
      stoppedByTrigger,
      predictions: speculation.finish(),
      firstTokenAt: this.firstTokenAt,
      lastTokenAt: this.lastTokenAt,
    };
  }

  /** Streams the events of `evaluation`'s tokens until the reply ends or the grammar switches. */
  private async *consume(evaluation: AsyncGenerator<Token>): AsyncGenerator<EngineEvent, Next> {
    const { model, signal } = this.options;
    for await (const token of evaluation) {
      this.lastTokenAt = performance.now();
      if (this.firstTokenAt === 0) this.firstTokenAt = this.lastTokenAt;
      if (model.isEogToken(token)) return "end";
      const fresh = this.text.push(token);
      const next = fresh === undefined ? undefined : this.parse(fresh);
      for (const event of this.reply.take()) yield event;
      if (this.parser.stopped) return "end";
      // A forced call is the whole reply (llama-server's rule too): it ends with the call. Under
      // structured output too: text after a call would be outside the schema, so the answer comes
      // in the response after the tool's output (under the call-or-schema grammar again).
      if (next === "calls_ended" && (this.choice !== "auto" || this.options.request.format)) return "end";
      if (next) return next;
      if (signal?.aborted) {
        this.stopReason = "cancelled";
        return "end";
      }
      if (this.text.tokens.length >= this.maxOutput) {
        this.stopReason = "length";
        return "end";
      }
    }
    return "end";
  }

  /** Hands newly decoded text to the parser; says whether the grammar must switch. */
  private parse(fresh: string): Next | undefined {
    let marks = this.reply.read(this.parser.push(fresh));
    let next: Next | undefined;
    for (;;) {
      if (marks.callsEnd && this.grammar) next = "calls_ended";
      if (marks.callsBegin === undefined) return next;
      if (!this.grammar) {
        // Generate the call again from the last token boundary at or before its trigger's end,
        // under the grammar; the text from that boundary to the trigger's end is already parsed,
        // so the grammar repeats it and the parser skips it.
        this.parser.truncate(marks.callsBegin);
        return this.text.rewindPoint(marks.callsBegin);
      }
      // Under a grammar already (a forced call), parsing goes on at once after the trigger.
      marks = this.reply.read(this.parser.push(""));
    }
  }

  /** A call began outside the grammar: its tokens from `point` on are generated again under it. */
  private callUnderGrammar(point: RewindPoint): AsyncGenerator<Token> {
    const { prompt, grammars, speculation } = this.options;
    this.text.rewind(point);
    const generated = this.text.tokens;
    const last = generated.at(-1) ?? prompt[prompt.length - 1]!;
    this.grammar = grammars.state(
      callGrammar(this.syntax!, this.tools, { choice: this.choice, lead: point.lead }),
    );
    speculation.pause();
    // `last` goes back in at its own position: everything from there on is generated again.
    return this.decode(last, 0, prompt.length - 1 + generated.length);
  }

  /** The calls ended: the model writes freely again, with drafts, natively where it may. */
  private afterCalls(): AsyncGenerator<Token> {
    const { speculation } = this.options;
    this.grammar = undefined;
    speculation.resume();
    const generated = this.text.tokens;
    return this.decode(generated.at(-1)!, speculation.native ? this.maxOutput - generated.length : 0);
  }

  /**
   * The tokens after `lastToken`, up to `nativeTokens` of them from the native loop; the sequence
   * is first cut back to `eraseFrom` when given.
   */
  private decode(lastToken: Token, nativeTokens: number, eraseFrom?: number): AsyncGenerator<Token> {
    const { decoder, sequence, request, speculation, prompt } = this.options;
    return decoder.decode(sequence, lastToken, request, {
      nativeTokens,
      nativeDrafts: () => speculation.nativeDrafts(prompt, this.text.tokens, this.text.text),
      onNativeDrafted: (result) => speculation.countNative(result),
      drafting: speculation,
      grammar: this.grammar,
      eraseFrom,
    });
  }
}
