import { realpath } from "node:fs/promises";
import {
  type AgentApp,
  type AgentContext,
  agent,
  type ContentBlock,
  type McpServer,
  PROTOCOL_VERSION,
  RequestError,
  type SessionConfigOption,
  type SessionModeState,
} from "@agentclientprotocol/sdk";
import { z } from "zod";
import { sessionsDir } from "../../agent/transcript.js";
import { HostClientError } from "../../client-core/host-client-error.js";
import type { StampedEvent } from "../../client-core/thread-view.js";
import { DEFAULT_MAX_THREADS } from "../../host/agent-host.js";
import { AGENT_MODES, type AgentMode, type ThreadInfo } from "../../protocol/agent.js";
import { SessionThreadSource } from "../../runtime/session-thread-source.js";
import { VERSION } from "../version.js";
import { asRequestError, RESOURCE_NOT_FOUND } from "./acp-errors.js";
import { AcpSession } from "./acp-session.js";
import { editorMcpServers, MODES, parseAcpCommand } from "./acp-session-config.js";
import type { AcpWorkspaces } from "./acp-workspaces.js";

/** The extension method that steers a running prompt (ACP v1 has none). */
export const STEER_METHOD = "_spark/steer";

/**
 * Sessions one `spark acp` follows at once (each holds a thread open in its agent host): the agent
 * host's own cap, so a workspace's host always has room for them. Past it the least recently used
 * idle session is released (it follows its thread again when next used); with none idle, new
 * sessions are refused.
 */
export const MAX_SESSIONS = DEFAULT_MAX_THREADS;

/** Sessions one `spark acp` remembers, released ones included; past it the least recently used released one is forgotten. */
const MAX_KNOWN_SESSIONS = 1024;

/** Spark's one auth method: it runs here, so there is nothing to sign in to. */
const LOCAL_AUTH = {
  id: "spark-local",
  name: "Local",
  description: "Spark runs on this machine (or on the engine your config names): nothing to sign in to.",
} as const;

/** The most text one prompt or steer may carry: the agent host's own bound on a turn's input. */
const MAX_INPUT_BYTES = 1024 * 1024;

/** `_spark/steer` params: the session and the message, as `session/prompt` gives them. */
const steerParams = z
  .object({
    sessionId: z.string().min(1).max(256),
    prompt: z
      .array(
        z.discriminatedUnion("type", [
          z.object({ type: z.literal("text"), text: z.string() }).passthrough(),
          z.object({ type: z.literal("resource_link"), uri: z.string(), name: z.string() }).passthrough(),
        ]),
      )
      .min(1)
      .max(1024),
  })
  .strict();

/**
 * Spark as an ACP agent: a session is an agent-host thread in the workspace of its `cwd`
 * ({@link AcpWorkspaces}), run through {@link AcpSession}. The SDK parses every request's params
 * against ACP's schema before a handler runs and answers a malformed message with a JSON-RPC error.
 */
export function acpAgent(workspaces: AcpWorkspaces, log: (line: string) => void): AgentApp {
  const sessions = new Map<string, AcpSession>();
  /** Sessions being opened: they count against MAX_SESSIONS from the moment they are asked for. */
  let opening = 0;
  /** Sessions following their thread now (opened, not released, not closed). */
  const following = () => [...sessions.values()].filter((s) => s.following).length;
  /**
   * Releases the least recently used idle session, one whose thread the host keeps (it had a
   * prompt) before one never used (whose thread is gone once the host lets it go); false when
   * every session is busy.
   */
  const releaseOne = (): boolean => {
    const idle = [...sessions.values()]
      .filter((s) => s.idle)
      .sort((a, b) => Number(b.kept) - Number(a.kept) || a.lastUsed - b.lastUsed)[0];
    idle?.release();
    return idle !== undefined;
  };
  /** Keeps the sessions remembered within MAX_KNOWN_SESSIONS, forgetting released ones first. */
  const forgetOld = () => {
    const released = [...sessions.values()]
      .filter((s) => !s.following)
      .sort((a, b) => a.lastUsed - b.lastUsed);
    for (const old of released.slice(0, Math.max(0, sessions.size - MAX_KNOWN_SESSIONS))) {
      old.close();
      sessions.delete(old.id);
    }
  };
  let editor: AgentContext | null = null;
  const transcripts = new SessionThreadSource(() => {
    throw new Error("Listing sessions needs no runtime.");
  }, sessionsDir());

  const session = (sessionId: string): AcpSession => {
    const found = sessions.get(sessionId);
    if (!found)
      throw new RequestError(
        RESOURCE_NOT_FOUND,
        `No open session ${sessionId}: load it first (session/load).`,
        {
          sessionId,
        },
      );
    found.lastUsed = Date.now();
    return found;
  };
  /**
   * Runs `follow` (which makes a session follow its thread) once there is room for one more
   * session: the least recently used idle ones are released at the cap. The room is counted before
   * any wait, so sessions opened at once cannot pass the cap together.
   */
  const withRoom = async <T>(follow: () => Promise<T>): Promise<T> => {
    while (following() + opening >= MAX_SESSIONS)
      if (!releaseOne())
        throw RequestError.invalidRequest(
          undefined,
          `At most ${MAX_SESSIONS} sessions run at once, and all of them are busy.`,
        );
    opening++;
    try {
      // An agent host shared with other faces may be full: idle sessions make room, one by one.
      return await retryAtLimit(follow, releaseOne);
    } finally {
      opening--;
    }
  };
  /** The session, following its thread again if it was released. */
  const live = async (sessionId: string): Promise<AcpSession> => {
    const found = session(sessionId);
    if (found.following) return found;
    try {
      await withRoom(() => found.attach());
    } catch (error) {
      if (!(error instanceof HostClientError && error.wire?.code === "not_found"))
        throw asRequestError(error);
      found.close();
      sessions.delete(sessionId);
      throw new RequestError(
        RESOURCE_NOT_FOUND,
        `Session ${sessionId} was never used and was let go to make room for others: start a new one.`,
        { sessionId },
      );
    }
    return found;
  };
  const connection = (): AgentContext => {
    if (!editor) throw RequestError.internalError(undefined, "Not connected.");
    return editor;
  };
  /** Opens a session on thread `threadId` (a new one when absent) in the workspace of `cwd`. */
  const open = async (
    cwd: string,
    threadId: string | null,
    replay: boolean,
    mcpServers: McpServer[] = [],
  ): Promise<{ sessionId: string; modes: SessionModeState; configOptions: SessionConfigOption[] }> => {
    if (threadId !== null) {
      sessions.get(threadId)?.close();
      sessions.delete(threadId);
    }
    try {
      const workspace = await workspaces.get(cwd);
      let opened: AcpSession;
      let starting: StampedEvent[] = [];
      const unused = threadId === null ? null : unusedMcpNotice(mcpServers);
      if (threadId === null) {
        const editor = editorMcpServers(mcpServers);
        if (editor.skipped.length > 0)
          log(
            `The editor's SSE MCP servers (${editor.skipped.join(", ")}) are not used: Spark takes stdio and HTTP servers.`,
          );
        // What the thread says as it starts (its MCP servers left out or failed) comes before
        // startThread resolves, so before the session follows it: kept to show once it does.
        const early: StampedEvent[] = [];
        const off = workspace.client.on("event", (event) => early.push(event));
        let info: ThreadInfo;
        try {
          info = await withRoom(() => workspace.client.startThread({ mcpServers: editor.servers }));
        } finally {
          off();
        }
        opened = new AcpSession(workspace.client, connection(), info, workspace.root, log);
        starting = early.filter((event) => event.thread_id === info.id && event.type === "thread.history");
      } else {
        opened = new AcpSession(
          workspace.client,
          connection(),
          placeholder(threadId, workspace.root),
          workspace.root,
          log,
        );
        try {
          await withRoom(() => opened.resume(replay));
        } catch (error) {
          opened.close();
          throw error;
        }
      }
      sessions.set(opened.id, opened);
      forgetOld();
      // After this answer went out: a client that learns of the session from the answer (Zed)
      // drops updates of a session it does not know yet. The answer is written before the next
      // turn of the event loop.
      if (unused) log(unused);
      setImmediate(() => {
        opened.catchUp(starting);
        if (unused) opened.notice(unused);
        opened.advertiseCommands();
      });
      return {
        sessionId: opened.id,
        modes: { currentModeId: opened.mode, availableModes: MODES },
        configOptions: opened.configOptions,
      };
    } catch (error) {
      throw asRequestError(error);
    }
  };

  return (
    agent({ name: "spark" })
      .onConnect((connected) => {
        editor = connected.client;
      })
      // ACP: the requested version when supported, else the latest supported; Spark speaks only v1.
      .onRequest("initialize", () => ({
        protocolVersion: PROTOCOL_VERSION,
        agentCapabilities: {
          loadSession: true,
          // Text and resource links (every agent's baseline), and embedded text resources.
          promptCapabilities: { image: false, audio: false, embeddedContext: true },
          sessionCapabilities: { list: {}, resume: {}, close: {} },
          _meta: { [STEER_METHOD]: true },
        },
        agentInfo: { name: "spark", title: "Spark", version: VERSION },
        // Spark runs on this machine: its one method signs in to nothing. (The ACP registry lists
        // agents that offer a method of type agent or terminal.)
        authMethods: [LOCAL_AUTH],
      }))
      .onRequest("authenticate", ({ params }) => {
        if (params.methodId !== LOCAL_AUTH.id)
          throw RequestError.invalidParams(
            { methodId: params.methodId },
            `Unknown auth method ${params.methodId}: Spark offers ${LOCAL_AUTH.id}.`,
          );
        return {};
      })
      .onRequest("session/new", async ({ params }) => open(params.cwd, null, false, params.mcpServers))
      .onRequest("session/load", async ({ params }) => {
        const { modes, configOptions } = await open(params.cwd, params.sessionId, true, params.mcpServers);
        return { modes, configOptions };
      })
      .onRequest("session/resume", async ({ params }) => {
        const { modes, configOptions } = await open(params.cwd, params.sessionId, false, params.mcpServers);
        return { modes, configOptions };
      })
      .onRequest("session/close", ({ params }) => {
        session(params.sessionId).close();
        sessions.delete(params.sessionId);
        return {};
      })
      .onRequest("session/list", async ({ params }) => {
        if (params.cursor)
          throw RequestError.invalidParams(
            { cursor: params.cursor },
            "Unknown cursor: the list has one page.",
          );
        const workspace = params.cwd ? await realpath(params.cwd).catch(() => params.cwd) : null;
        const threads = await transcripts.list().catch((error: unknown) => {
          throw asRequestError(error);
        });
        return {
          sessions: threads
            .filter((thread) => workspace === null || thread.cwd === workspace)
            .map((thread) => ({
              sessionId: thread.id,
              cwd: thread.cwd,
              title: thread.title,
              updatedAt: thread.updatedAt,
            })),
        };
      })
      .onRequest("session/set_mode", async ({ params }) => {
        if (!(AGENT_MODES as readonly string[]).includes(params.modeId))
          throw RequestError.invalidParams(
            { modeId: params.modeId },
            `Unknown mode ${params.modeId}: one of ${AGENT_MODES.join(", ")}.`,
          );
        await (await live(params.sessionId)).setMode(params.modeId as AgentMode);
        return {};
      })
      .onRequest("session/set_config_option", async ({ params }) => {
        const target = await live(params.sessionId);
        const value = params.value;
        if (typeof value !== "string")
          throw RequestError.invalidParams({ configId: params.configId }, "Spark's options take a value id.");
        if (params.configId === "mode") {
          if (!(AGENT_MODES as readonly string[]).includes(value))
            throw RequestError.invalidParams(
              { value },
              `Unknown mode ${value}: one of ${AGENT_MODES.join(", ")}.`,
            );
          await target.setMode(value as AgentMode);
        } else if (params.configId === "model") {
          await target.setModel(value);
        } else {
          throw RequestError.invalidParams(
            { configId: params.configId },
            `Unknown option ${params.configId}: Spark's are mode and model.`,
          );
        }
        return { configOptions: target.configOptions };
      })
      .onRequest("session/prompt", async ({ params }) => {
        const input = promptInput(params.prompt);
        const target = await live(params.sessionId);
        const command = parseAcpCommand(input);
        return { stopReason: command ? await target.runCommand(command) : await target.prompt(input) };
      })
      .onNotification("session/cancel", ({ params }) => {
        sessions.get(params.sessionId)?.cancel();
      })
      .onRequest(STEER_METHOD, steerParams, async ({ params }) => {
        const input = promptInput(params.prompt as ContentBlock[]);
        await (await live(params.sessionId)).steer(input);
        return {};
      })
  );
}

/**
 * A prompt's blocks as the turn's input: text as written, a resource link as a Markdown link, an
 * embedded text resource as a fenced block after its URI. Images, audio and binary resources are
 * refused (the capabilities say so).
 */
export function promptInput(blocks: readonly ContentBlock[]): string {
  const parts = blocks.map((block) => {
    switch (block.type) {
      case "text":
        return block.text;
      case "resource_link":
        return `[${block.name}](${block.uri})`;
      case "resource":
        if (!("text" in block.resource))
          throw RequestError.invalidParams(
            undefined,
            `Binary resources are not supported: ${block.resource.uri}`,
          );
        return `\n\n${block.resource.uri}:\n\`\`\`\n${block.resource.text}\n\`\`\`\n\n`;
      case "image":
      case "audio":
        throw RequestError.invalidParams(
          undefined,
          `${block.type} content is not supported (see promptCapabilities).`,
        );
      default: {
        const unknown: never = block;
        throw RequestError.invalidParams(
          undefined,
          `Unknown content type ${String((unknown as { type: unknown }).type)}.`,
        );
      }
    }
  });
  const input = parts.join("");
  if (!input.trim()) throw RequestError.invalidParams(undefined, "The prompt is empty.");
  if (Buffer.byteLength(input) > MAX_INPUT_BYTES)
    throw RequestError.invalidParams(undefined, `The prompt is over ${MAX_INPUT_BYTES} bytes.`);
  return input;
}

/** What a person is told when the editor passed MCP servers for a saved session, which takes none. */
export function unusedMcpNotice(servers: readonly McpServer[]): string | null {
  if (servers.length === 0) return null;
  const names = servers.map((server) => server.name).join(", ");
  return `The editor's MCP servers (${names}) are not used in a saved session Spark continues: they join new sessions only.`;
}

/** Runs `open` again after each `limit_reached` of the agent host for which `makeRoom` made room. */
async function retryAtLimit<T>(open: () => Promise<T>, makeRoom: () => boolean): Promise<T> {
  for (;;) {
    try {
      return await open();
    } catch (error) {
      const full = error instanceof HostClientError && error.wire?.code === "limit_reached";
      if (!full || !makeRoom()) throw error;
    }
  }
}

/** Until its `thread.started` arrives, a resumed thread is known by its id alone. */
function placeholder(id: string, cwd: string): ThreadInfo {
  return { id, title: "", cwd, model: "", createdAt: "", updatedAt: "" };
}
