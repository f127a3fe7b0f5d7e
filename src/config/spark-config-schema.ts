import { z } from "zod";
import { SANDBOX_MODES } from "../protocol/agent.js";
import { mcpServersSchema } from "./mcp-servers-config.js";

/** The shape of a config.toml (user or project), as loadConfig validates it. */
const tierName = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,31}$/, "a tier name is lowercase letters, digits, - or _");

const admissionSchema = z
  .object({
    max_concurrent: z.number().int().min(1).max(1024).optional(),
    max_queue: z.number().int().min(0).max(100_000).optional(),
    queue_timeout_ms: z.number().int().min(1).max(3_600_000).optional(),
    requests_per_minute: z.number().int().min(1).optional(),
    tokens_per_minute: z.number().int().min(1).optional(),
  })
  .strict();

const tierSchema = z
  .object({
    /** `llama` (embedded) or `upstream` (any OpenAI-compatible endpoint). */
    engine: z.enum(["llama", "upstream"]).optional(),
    /** llama: a GGUF path or hf: URI. upstream: the model id the endpoint serves. */
    model: z.string().min(1).max(1024).optional(),
    /** upstream: one base URL (`http://host:8000/v1`) or several replicas. */
    url: z.union([z.url(), z.array(z.url()).min(1).max(64)]).optional(),
    /** upstream: the environment variable holding the API key (never the key itself). */
    api_key_env: z
      .string()
      .regex(/^[A-Z_][A-Z0-9_]*$/)
      .optional(),
    /** llama: tokens of context per conversation. */
    context: z
      .number()
      .int()
      .min(1024)
      .max(1 << 20)
      .optional(),
    /** llama: conversations decoded at once. */
    parallel: z.number().int().min(1).max(64).optional(),
    /**
     * llama: a smaller GGUF (path or hf: URI) with the same vocabulary that drafts tokens for the
     * model to verify. Default: none (it pays off mainly on a GPU).
     */
    draft_model: z.string().min(1).max(1024).optional(),
    admission: admissionSchema.optional(),
    /** upstream: longest wait for a response's first chunk, headers included. Default: 60000. */
    first_chunk_timeout_ms: z.number().int().min(1).max(3_600_000).optional(),
    /** upstream: longest wait between two streamed chunks. Default: 30000. */
    idle_timeout_ms: z.number().int().min(1).max(3_600_000).optional(),
  })
  .strict()
  .superRefine((tier, ctx) => {
    if (tier.engine === "upstream" && !tier.url)
      ctx.addIssue({ code: "custom", message: "an upstream tier needs url", path: ["url"] });
    if (tier.engine === "upstream" && !tier.model)
      ctx.addIssue({ code: "custom", message: "an upstream tier needs model", path: ["model"] });
  });

/** Memory and work limits (README → Limits); each absent field keeps its default. */
const limitsSchema = z
  .object({
    /** spark serve: WebSocket connections open at once, all endpoints. Default: 256. */
    max_connections: z.number().int().min(1).max(100_000).optional(),
    /** spark serve: minutes a Responses WebSocket stays open before clients must reconnect. Default: 60. */
    connection_minutes: z.number().int().min(1).max(10_080).optional(),
    /** spark serve: MiB of stored responses for previous_response_id. Default: 256. */
    store_mb: z.number().int().min(1).max(1_048_576).optional(),
    /** Agent host: MiB of events kept per thread for reconnecting clients. Default: 4. */
    host_replay_mb: z.number().int().min(1).max(4096).optional(),
    /** Agent host: threads open at once. Default: 32. */
    max_threads: z.number().int().min(1).max(10_000).optional(),
    /** Agent host: minutes before an idle thread is let go (it stays resumable). Default: 10. */
    thread_idle_minutes: z.number().int().min(1).max(10_080).optional(),
    /** Messages queued behind a running turn, per thread. Default: 32. */
    max_queued_turns: z.number().int().min(1).max(10_000).optional(),
    /** MiB of queued messages per thread. Default: 4. */
    max_queued_mb: z.number().int().min(1).max(1024).optional(),
    /** Sub-agents running at once per thread. Default: 4. */
    max_subagents: z.number().int().min(1).max(64).optional(),
    /** Rounds of tool calls one agent turn may run before it stops. Default: 50. */
    max_tool_rounds: z.number().int().min(1).max(10_000).optional(),
    /**
     * Output tokens one model response of the agent may write. Default: a quarter of the model's
     * context, from 256 to 16384.
     */
    max_output_tokens: z.number().int().min(16).max(1_000_000).optional(),
  })
  .strict();

export type Limits = z.infer<typeof limitsSchema>;

export const sparkConfigSchema = z
  .object({
    /** The tier a session starts on. Default: `fast`. */
    default_tier: tierName.optional(),
    /** The tier the `delegate` tool hands longer work to. Default: `deep` when declared. */
    delegate_tier: tierName.optional(),
    tiers: z.record(tierName, tierSchema).optional(),
    /** Where approved commands run (see SandboxMode). Default: `workspace-write`. */
    sandbox: z.enum(SANDBOX_MODES).optional(),
    limits: limitsSchema.optional(),
    /**
     * The share of the model's context window past which the agent compacts older turns, from 0.1
     * to 0.95 (`--compact-at`). Default: 0.8.
     */
    compact_at: z.number().min(0.1).max(0.95).optional(),
    /** MCP servers whose tools the agent offers as `mcp__NAME__TOOL` (README → MCP servers). */
    mcp_servers: mcpServersSchema.optional(),
    /** Language-server errors after each edit (README → Diagnostics after edits). */
    diagnostics: z.object({ enabled: z.boolean().optional() }).strict().optional(),
  })
  .strict();

/** A tier after merging: the engine is always set (default `llama`). */
export type TierConfig = z.infer<typeof tierSchema> & { engine: "llama" | "upstream" };
export type SparkConfig = z.infer<typeof sparkConfigSchema>;
