export type SlashCommandName =
  | "help"
  | "undo"
  | "rewind"
  | "new"
  | "fork"
  | "model"
  | "plan"
  | "skills"
  | "agents"
  | "cancel"
  | "mcp"
  | "review"
  | "compact"
  | "diff"
  | "exit";

export interface SlashCommand {
  name: SlashCommandName;
  /** The rest of the line, trimmed ("" when none). */
  args: string;
}

export const SLASH_COMMANDS: readonly { name: SlashCommandName; usage: string; description: string }[] = [
  { name: "help", usage: "/help", description: "show commands and keys" },
  { name: "undo", usage: "/undo", description: "revert the last patch the agent applied" },
  {
    name: "rewind",
    usage: "/rewind",
    description: "go back to before a message: its code, the conversation, or both",
  },
  { name: "new", usage: "/new", description: "start a new session" },
  {
    name: "fork",
    usage: "/fork [turn]",
    description: "continue in a new session from turn N (default: the latest); /fork list lists them",
  },
  { name: "model", usage: "/model [name]", description: "show the model, or switch to another" },
  {
    name: "plan",
    usage: "/plan [on|off]",
    description:
      "plan mode on / off (as Shift+Tab): edits and commands refused, the model answers with a plan",
  },
  { name: "skills", usage: "/skills", description: "list the skills the model may load" },
  { name: "agents", usage: "/agents", description: "list the defined agents and the background sub-agents" },
  { name: "cancel", usage: "/cancel [id]", description: "cancel a running sub-agent (default: the latest)" },
  { name: "mcp", usage: "/mcp", description: "list the MCP servers: state, approval, tools, errors" },
  {
    name: "review",
    usage: "/review [--base B | --commit C]",
    description:
      "review the uncommitted changes (or a branch's, a commit's), read-only: findings by file and line",
  },
  {
    name: "compact",
    usage: "/compact [focus]",
    description: "summarise older turns to free context, keeping FOCUS in view",
  },
  {
    name: "diff",
    usage: "/diff",
    description: "show what the session changed: a diff of each file since it began",
  },
  { name: "exit", usage: "/exit", description: "quit (also Ctrl+D on an empty prompt)" },
];

const ALIASES: Record<string, SlashCommandName> = { quit: "exit", clear: "new", "?": "help" };

export const KEYS: readonly [key: string, description: string][] = [
  ["Enter", "send; while the model works, steer it with the message"],
  ["Tab", "complete a /command or @file; otherwise queue the message to run after the current turn"],
  ["@", "mention a file: pick it from the list, its contents go with the message"],
  ["Shift+Tab", "plan mode on / off: edits and commands refused, the model answers with a plan"],
  ["Esc", "interrupt the model"],
  ["Up / Down", "previous / next message you typed"],
  ["\\ then Enter, Ctrl+J", "new line"],
  ["Ctrl+A, Ctrl+E", "start, end of the line"],
  ["Ctrl+U, Ctrl+K, Ctrl+W", "delete to the start, to the end, the word before"],
  ["y / n", "approve or deny a command the agent asks to run"],
  ["Ctrl+C", "clear the prompt; twice to quit"],
  ["Ctrl+D", "quit, on an empty prompt"],
];

/**
 * The command in `text`, or null when it is not a slash command. An unknown `/word` comes back as
 * `{ unknown }` so the UI can say so instead of sending it to the model by accident.
 */
export function parseSlashCommand(text: string): SlashCommand | { unknown: string } | null {
  const match = /^\/(\S+)(?:\s+([\s\S]*))?$/.exec(text.trim());
  if (!match) return null;
  const word = match[1]!.toLowerCase();
  const name = SLASH_COMMANDS.find((command) => command.name === word)?.name ?? ALIASES[word];
  if (!name) return { unknown: `/${match[1]}` };
  return { name, args: (match[2] ?? "").trim() };
}

/** The lines `/help` prints. */
export function helpLines(): string[] {
  const width =
    Math.max(...SLASH_COMMANDS.map((c) => c.usage.length), ...KEYS.map(([key]) => key.length)) + 2;
  return [
    "Commands:",
    ...SLASH_COMMANDS.map((c) => `  ${c.usage.padEnd(width)}${c.description}`),
    "Keys:",
    ...KEYS.map(([key, description]) => `  ${key.padEnd(width)}${description}`),
  ];
}
