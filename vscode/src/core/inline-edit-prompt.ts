export interface InlineEditRequest {
  /** The file, relative to the workspace (as the agent's tools take it). */
  path: string;
  /** 1-based, inclusive. */
  startLine: number;
  endLine: number;
  /** The selected text (the whole lines of the selection). */
  selection: string;
  /** What the person asked for. */
  instruction: string;
  /** The editor's language id, for the code fence. Default: none. */
  languageId?: string;
}

/**
 * The turn input for an inline edit: the instruction first (it is what the model must act on),
 * then where and what the selection is. The file is saved before this is sent, so the agent's
 * apply_patch sees what the editor shows.
 */
export function inlineEditPrompt(request: InlineEditRequest): string {
  const lines =
    request.startLine === request.endLine
      ? `line ${request.startLine}`
      : `lines ${request.startLine}-${request.endLine}`;
  const fence = request.selection.includes("```") ? "````" : "```";
  const body = request.selection.endsWith("\n") ? request.selection : `${request.selection}\n`;
  return [
    `${request.instruction.trim()}`,
    "",
    `Edit ${request.path}, ${lines}:`,
    `${fence}${request.languageId ?? ""}`,
    `${body}${fence}`,
    "",
    "Make the smallest change that does this with apply_patch; leave the rest of the file as it is.",
  ].join("\n");
}
