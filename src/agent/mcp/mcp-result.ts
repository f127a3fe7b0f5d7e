import { OutputCapture } from "../tools/internal/output-capture.js";

/** Bytes of an MCP call's output the model sees, as for `shell`. */
export const MCP_MAX_OUTPUT_BYTES = 64 * 1024;

/** A content block of a tool result, as MCP servers send it (unknown kinds are summarised too). */
interface ContentBlock {
  type: string;
  text?: unknown;
  data?: unknown;
  mimeType?: unknown;
  uri?: unknown;
  name?: unknown;
  resource?: unknown;
}

/**
 * What the model sees of a `tools/call` result: text blocks joined by blank lines, every other
 * block summarised in one line (`[image image/png, 1234 bytes]`), the structured content as JSON
 * when there is no content at all, cut to {@link MCP_MAX_OUTPUT_BYTES} (head and tail kept).
 */
export function mcpResultText(result: { content?: unknown; structuredContent?: unknown }): string {
  const blocks = Array.isArray(result.content) ? (result.content as ContentBlock[]) : [];
  const parts = blocks.map(describeBlock);
  if (parts.length === 0 && result.structuredContent !== undefined) {
    parts.push(JSON.stringify(result.structuredContent));
  }
  const capture = new OutputCapture(MCP_MAX_OUTPUT_BYTES);
  capture.add(Buffer.from(parts.join("\n\n"), "utf8"));
  return capture.text();
}

function describeBlock(block: ContentBlock): string {
  switch (block.type) {
    case "text":
      return typeof block.text === "string" ? block.text : "";
    case "image":
    case "audio":
      return `[${block.type} ${String(block.mimeType ?? "unknown type")}, ${base64Bytes(block.data)} bytes]`;
    case "resource_link":
      return `[resource link ${String(block.uri ?? "")}${typeof block.name === "string" ? ` (${block.name})` : ""}]`;
    case "resource":
      return describeResource(block.resource);
    default:
      return `[${String(block.type)} content]`;
  }
}

/** An embedded resource: its text when it has some, else what it is. */
function describeResource(resource: unknown): string {
  if (typeof resource !== "object" || resource === null) return "[resource]";
  const { uri, text, blob, mimeType } = resource as Record<string, unknown>;
  if (typeof text === "string") return `[resource ${String(uri ?? "")}]\n${text}`;
  const type = typeof mimeType === "string" ? `${mimeType}, ` : "";
  return `[resource ${String(uri ?? "")} (${type}${base64Bytes(blob)} bytes)]`;
}

/** Decoded size of base64 text, without decoding it. */
function base64Bytes(data: unknown): number {
  if (typeof data !== "string") return 0;
  const padding = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding);
}
