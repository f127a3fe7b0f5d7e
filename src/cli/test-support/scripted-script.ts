import { readFileSync } from "node:fs";
import { z } from "zod";
import type { Script, ScriptedReply } from "../../engine/scripted/scripted-engine.js";
import { SparkError } from "../../protocol/errors.js";

const replySchema = z
  .object({
    /**
     * Served when the request's last message is a user message containing this text (the first
     * entry that matches wins). Entries without it are served in order, cycling, to every other
     * request: a turn's follow-up after its tool calls, or a user message no entry matches.
     */
    match: z.string().min(1).optional(),
    /** What the model thinks before it answers (streamed as reasoning, like Qwen3's `<think>`). */
    reasoning: z.string().optional(),
    text: z.string().optional(),
    toolCalls: z
      .array(z.object({ name: z.string().min(1), arguments: z.string() }).strict())
      .min(1)
      .optional(),
  })
  .strict()
  .refine((reply) => reply.text !== undefined || reply.toolCalls !== undefined, {
    message: "a reply needs text, toolCalls or both",
  });

const scriptSchema = z.array(replySchema).min(1);

export type ScriptFileEntry = z.infer<typeof replySchema>;

/**
 * The replies of the scripted engine that `SPARK_TEST_ENGINE='{"script":"<file.json>"}'` asks for (test-engine.ts): a JSON array such as
 * `[{ "match": "rename", "toolCalls": [{ "name": "apply_patch", "arguments": "{...}" }] },
 * { "text": "Done." }]`. Plain entries (no `match`) are served in order, like the scripted
 * engine's own arrays; `match` entries answer the user messages that contain their text, so a
 * demo or an end-to-end test does not depend on how many requests came before. A user message no
 * entry matches, when every entry has a `match`, is echoed as the default engine does.
 * Throws a SparkError `invalid_request` naming the entry at fault.
 */
export function parseScript(json: string, source = "the script"): Script {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (error) {
    throw new SparkError("invalid_request", `${source} is not JSON: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const parsed = scriptSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = issue.path.length > 0 ? ` at [${issue.path.join("][")}]` : "";
    throw new SparkError("invalid_request", `${source} is not a script${where}: ${issue.message}.`, {
      param: "script",
    });
  }
  const entries = parsed.data;
  const plain = entries.filter((entry) => entry.match === undefined);
  let next = 0;
  return (request) => {
    const last = request.messages.at(-1);
    if (last?.role === "user") {
      const matched = entries.find(
        (entry) => entry.match !== undefined && last.content.includes(entry.match),
      );
      if (matched) return reply(matched);
    }
    if (plain.length === 0) {
      return { text: last?.role === "user" ? `You said: ${last.content}` : "Done." };
    }
    return reply(plain[next++ % plain.length]!);
  };
}

/** Reads and parses a script file (see {@link parseScript}). */
export function loadScriptFile(file: string): Script {
  let json: string;
  try {
    json = readFileSync(file, "utf8");
  } catch (error) {
    throw new SparkError("invalid_request", `Cannot read the script ${file}: ${(error as Error).message}`, {
      param: "script",
      cause: error,
    });
  }
  return parseScript(json, file);
}

function reply(entry: ScriptFileEntry): ScriptedReply {
  return {
    ...(entry.reasoning === undefined ? {} : { reasoning: entry.reasoning }),
    ...(entry.text === undefined ? {} : { text: entry.text }),
    ...(entry.toolCalls === undefined ? {} : { toolCalls: entry.toolCalls }),
  };
}
