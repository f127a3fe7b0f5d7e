import type { ToolChoice, ToolDefinition } from "../../../protocol/chat.js";
import { gemmaLayout } from "./gemma-arguments.js";
import { GbnfRules, gbnfLiteral, schemaRule } from "./json-schema-grammar.js";
import type { CallSyntax } from "./tool-call-syntax.js";
import { xmlParametersRule } from "./xml-arguments.js";

/**
 * The GBNF grammar for the rest of a call (or a section of calls) in `syntax`, from just after its
 * trigger, with `lead` (text already generated that the grammar must repeat, see the engine) before
 * it. With `withTrigger` it starts at the trigger itself: a call forced from the first token
 * (`tool_choice: "required"` or a named tool). Each call names one of `tools` (only the chosen
 * one for a named choice) and its arguments match that tool's JSON schema, in the syntax the
 * template writes them in (JSON, Qwen3-Coder's XML parameters, Gemma 4's values).
 */
export function callGrammar(
  syntax: CallSyntax,
  tools: readonly ToolDefinition[],
  options: {
    choice?: ToolChoice;
    withTrigger?: boolean;
    lead?: string;
    /** Another way the reply may go (structured output's answer): its rule, added to the same rules. */
    or?: (rules: GbnfRules) => string;
  } = {},
): string {
  const rules = new GbnfRules();
  const choice = options.choice;
  const chosen = typeof choice === "object" ? tools.filter((tool) => tool.name === choice.name) : tools;
  const gemma = syntax.args === "gemma" ? gemmaLayout(rules) : undefined;
  const alternatives = chosen.map((tool) => {
    const schema = tool.parameters ?? { type: "object" };
    const hint = `${tool.name}-args`;
    const name = gbnfLiteral(tool.name);
    if (syntax.args === "xml")
      return sequence(name, literal(syntax.nameEnd), xmlParametersRule(rules, schema, hint));
    // Gemma 4: the arguments object's braces are the name's end and the start of the call's close.
    if (gemma) return sequence(name, schemaRule(rules, schema, hint, 0, gemma));
    return sequence(name, literal(syntax.nameEnd), schemaRule(rules, schema, hint));
  });
  const named = rules.add("call-body", alternatives.join(" | "));
  // After a trigger, the opening goes on from the trigger's end (it may start before the trigger:
  // Harmony's `<|channel|>commentary ` is written before `to=functions.`).
  const open = (literal: string) => {
    const text = literal.trimStart();
    return options.withTrigger
      ? text
      : text.slice(Math.max(0, text.indexOf(syntax.trigger)) + syntax.trigger.length);
  };
  const callClose = gemma ? syntax.callClose.slice(syntax.nameEnd.length) : syntax.callClose;
  const call = (opening: string) => sequence(literal(opening), named, literal(callClose));
  const root = syntax.sectionOpen
    ? sequence(
        literal(options.lead ?? ""),
        literal(open(syntax.sectionOpen)),
        call(syntax.callOpen),
        rules.add("more-calls", `(${sequence(literal(syntax.between), call(syntax.callOpen))})*`),
        literal(syntax.sectionClose),
      )
    : sequence(literal(options.lead ?? ""), call(open(syntax.callOpen)));
  rules.add("root", options.or ? `${root} | ${options.or(rules)}` : root);
  return rules.toString();
}

/** A GBNF literal, or nothing for empty text. */
function literal(text: string): string {
  return text === "" ? "" : gbnfLiteral(text);
}

function sequence(...parts: string[]): string {
  return parts.filter((part) => part !== "").join(" ");
}
