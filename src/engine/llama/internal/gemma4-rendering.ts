import { type ChatModelFunctions, type ChatWrapper, LlamaText, SpecialTokensText } from "node-llama-cpp";
import { toGemmaText } from "./gemma-arguments.js";

/**
 * Makes node-llama-cpp's Gemma 4 wrapper write tools, calls and tool results as Gemma 4's template
 * does (`<|tool>declaration:NAME{description:<|"|>...<|"|>,parameters:{...}}<tool|>`,
 * `<|tool_call>call:NAME{key:<|"|>text<|"|>}<tool_call|>`,
 * `<|tool_response>response:NAME{value:<|"|>...<|"|>}<tool_response|>`) rather than as JSON between
 * its markers: what the model learned, and what the call grammar makes it write.
 */
export function withGemma4Rendering(wrapper: ChatWrapper): ChatWrapper {
  wrapper.generateFunctionCall = (name: string, params: unknown) =>
    gemmaText(`<|tool_call>call:${name}${toGemmaText(params ?? {})}<tool_call|>`);
  wrapper.generateFunctionCallResult = (name: string, _params: unknown, result: unknown) => {
    const response = isObject(result) ? toGemmaText(result) : `{value:${toGemmaText(result ?? "")}}`;
    return gemmaText(`<|tool_response>response:${name}${response}<tool_response|>`);
  };
  wrapper.generateAvailableFunctionsSystemText = (functions: ChatModelFunctions) =>
    LlamaText(
      Object.entries(functions).map(([name, fn]) =>
        gemmaText(`<|tool>${declaration(name, fn.description ?? "", fn.params)}<tool|>`),
      ),
    );
  return wrapper;
}

const SPECIAL = /(<\|"\|>|<\|tool>|<tool\|>|<\|tool_call>|<tool_call\|>|<\|tool_response>|<tool_response\|>)/;

/** Text with Gemma 4's markers as special tokens, as the model's tokenizer reads the template. */
function gemmaText(text: string): LlamaText {
  return LlamaText(text.split(SPECIAL).map((part, i) => (i % 2 === 1 ? new SpecialTokensText(part) : part)));
}

function quoted(text: unknown): string {
  return `<|"|>${String(text)}<|"|>`;
}

/** The template's `format_function_declaration`. */
function declaration(name: string, description: string, params: unknown): string {
  let text = `declaration:${name}{description:${quoted(description)}`;
  if (isObject(params)) {
    text += ",parameters:{";
    if (isObject(params.properties)) text += `properties:{${parameters(params.properties)}},`;
    if (Array.isArray(params.required) && params.required.length > 0) {
      text += `required:[${params.required.map(quoted).join(",")}],`;
    }
    if (params.type) text += `type:${quoted(String(params.type).toUpperCase())}}`;
  }
  return `${text}}`;
}

/** Keys the template's `format_parameters` leaves out. */
const STANDARD_KEYS = new Set(["description", "type", "properties", "required", "nullable"]);

/** The template's `format_parameters`: each property with its description, type and structure. */
function parameters(properties: Record<string, unknown>, depth = 0): string {
  if (depth > 8) return "";
  const parts: string[] = [];
  for (const [key, value] of sortedEntries(properties)) {
    if (STANDARD_KEYS.has(key) || !isObject(value)) continue;
    const type = String(value.type ?? "").toUpperCase();
    const fields: string[] = [];
    if (value.description) fields.push(`description:${quoted(value.description)}`);
    if (type === "STRING" && Array.isArray(value.enum) && value.enum.length > 0) {
      fields.push(`enum:${toGemmaText(value.enum)}`);
    }
    if (type === "ARRAY" && isObject(value.items) && Object.keys(value.items).length > 0) {
      fields.push(`items:{${items(value.items, depth)}}`);
    }
    if (value.nullable) fields.push("nullable:true");
    if (type === "OBJECT") {
      const inner = isObject(value.properties) ? value.properties : value;
      fields.push(`properties:{${parameters(inner, depth + 1)}}`);
      if (Array.isArray(value.required) && value.required.length > 0) {
        fields.push(`required:[${value.required.map(quoted).join(",")}]`);
      }
    }
    fields.push(`type:${quoted(type)}`);
    parts.push(`${key}:{${fields.join(",")}}`);
  }
  return parts.join(",");
}

function items(schema: Record<string, unknown>, depth: number): string {
  const parts: string[] = [];
  for (const [key, value] of sortedEntries(schema)) {
    if (value === null || value === undefined) continue;
    if (key === "properties")
      parts.push(`properties:{${isObject(value) ? parameters(value, depth + 1) : ""}}`);
    else if (key === "required")
      parts.push(`required:[${(Array.isArray(value) ? value : []).map(quoted).join(",")}]`);
    else if (key === "type") {
      const upper = Array.isArray(value)
        ? value.map((t) => String(t).toUpperCase())
        : String(value).toUpperCase();
      parts.push(`type:${toGemmaText(upper)}`);
    } else parts.push(`${key}:${toGemmaText(value)}`);
  }
  return parts.join(",");
}

function sortedEntries(object: Record<string, unknown>): [string, unknown][] {
  return Object.entries(object).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
