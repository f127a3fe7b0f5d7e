import { z } from "zod";

/** Longest server name: `mcp__NAME__` leaves at least 33 of a tool name's 64 characters for the tool. */
export const MCP_SERVER_NAME_MAX = 24;

export const mcpServerName = z
  .string()
  .regex(
    new RegExp(`^[a-z0-9][a-z0-9_-]{0,${MCP_SERVER_NAME_MAX - 1}}$`),
    `an MCP server name is lowercase letters, digits, - or _ (at most ${MCP_SERVER_NAME_MAX})`,
  );

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, "an environment variable name");
const headerName = z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/, "an HTTP header name");

/** A table of at most `max` entries. */
function boundedRecord<K extends z.ZodString, V extends z.ZodType>(key: K, value: V, max: number) {
  return z
    .record(key, value)
    .refine((table) => Object.keys(table).length <= max, { message: `at most ${max} entries` });
}

/**
 * `[mcp_servers.NAME]`: a stdio server (`command`, `args`, `env`, `cwd`) or a streamable HTTP one
 * (`url`, `headers`, `bearer_token_env`), never both.
 */
export const mcpServerSchema = z
  .object({
    /** stdio: the program to start. */
    command: z.string().min(1).max(4096).optional(),
    /** stdio: its arguments. */
    args: z.array(z.string().max(8192)).max(256).optional(),
    /** stdio: variables added to the small safe environment it gets (never Spark's whole environment). */
    env: boundedRecord(envName, z.string().max(32_768), 128).optional(),
    /** stdio: its working directory. Default: the workspace root. */
    cwd: z.string().min(1).max(4096).optional(),
    /** HTTP: the streamable HTTP endpoint (`http://localhost:3001/mcp`). */
    url: z
      .url({ protocol: /^https?$/ })
      .max(4096)
      .optional(),
    /** HTTP: headers sent with every request. */
    headers: boundedRecord(headerName, z.string().max(8192), 64).optional(),
    /** HTTP: the environment variable holding a bearer token (never the token itself). */
    bearer_token_env: envName.optional(),
    /** Its calls run without asking. Default: false (each call asks, unless `--approval auto`). */
    trusted: z.boolean().optional(),
    /** Default: true. */
    enabled: z.boolean().optional(),
    /** Longest wait for it to start and list its tools. Default: 30000. */
    startup_timeout_ms: z.number().int().min(100).max(600_000).optional(),
    /** Longest wait for one tool call. Default: 120000. */
    tool_timeout_ms: z.number().int().min(100).max(3_600_000).optional(),
  })
  .strict()
  .superRefine((server, ctx) => {
    if ((server.command === undefined) === (server.url === undefined)) {
      ctx.addIssue({ code: "custom", message: "an MCP server needs either command (stdio) or url (HTTP)" });
    }
    const stdioOnly = ["args", "env", "cwd"] as const;
    const httpOnly = ["headers", "bearer_token_env"] as const;
    const wrong = server.url !== undefined ? stdioOnly : server.command !== undefined ? httpOnly : [];
    for (const field of wrong) {
      if (server[field] !== undefined) {
        const transport = server.url !== undefined ? "an HTTP" : "a stdio";
        ctx.addIssue({
          code: "custom",
          message: `${field} does not apply to ${transport} server`,
          path: [field],
        });
      }
    }
  });

export const mcpServersSchema = z
  .record(mcpServerName, mcpServerSchema)
  .refine((table) => Object.keys(table).length <= 64, { message: "at most 64 MCP servers" });

export type McpServerEntry = z.infer<typeof mcpServerSchema>;

/** A server after merging: which config declared it. */
export type McpServerConfig = McpServerEntry & { source: "user" | "project" };

/** What an MCP server would do that needs the project's trust, in words for `spark trust`. */
export function mcpServerReason(server: McpServerEntry): string {
  if (server.url !== undefined) return `connects to the MCP server at ${server.url}`;
  return `starts the MCP server \`${[server.command, ...(server.args ?? [])].join(" ")}\``;
}
