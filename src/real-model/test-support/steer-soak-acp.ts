import { RequestError } from "@agentclientprotocol/sdk";
import { AcpTestClient } from "../../cli/acp/test-support/acp-test-client.js";
import { EventSocket, type SoakServer, STEER_TEXT, type Trial } from "./steer-soak.js";

/**
 * An editor's session on the soak's `spark serve`: `spark acp` in its workspace (it attaches to the
 * server), and a second agent host connection following the same thread, which sees every turn
 * start and end (ACP tells its client only about its own prompts).
 */
export interface AcpSoakSession {
  acp: AcpTestClient;
  sessionId: string;
  observer: EventSocket;
  close(): Promise<void>;
}

/** Starts `spark acp` and one session; `startMs` covers the agent's prompt being evaluated. */
export async function openAcpSession(serve: SoakServer, startMs: number): Promise<AcpSoakSession> {
  const acp = AcpTestClient.start(serve.repo, serve.env);
  try {
    await within(acp.initialize(), startMs, "initialize");
    const sessionId = await within(acp.newSession(serve.repo), startMs, "session/new");
    const observer = await EventSocket.open(`${serve.base}/v1/agent`, null);
    const resumed = observer.next(
      (event) => (event.type === "ack" || event.type === "error") && event.request_id === "follow",
      startMs,
      "thread.resume's answer",
    );
    observer.send({ type: "thread.resume", thread_id: sessionId, request_id: "follow" });
    const answer = await resumed;
    if (answer.type === "error") throw new Error(`thread.resume refused: ${JSON.stringify(answer.error)}`);
    return {
      acp,
      sessionId,
      observer,
      async close() {
        observer.close();
        await acp.close();
      },
    };
  } catch (error) {
    acp.child.kill();
    throw new Error(`${(error as Error).message}; spark acp said: ${acp.stderr.slice(-2000)}`);
  }
}

/** What the ACP trials saw beyond their invariants, for the soak's report. */
export interface AcpTally {
  /** Steers `spark acp` took (`_spark/steer` answered `{}`). */
  steered: number;
  /** Steers it refused (no turn was running to steer). */
  refused: number;
  /** Steers sent after their prompt had resolved already (a short reply): refused, rightly. */
  late: number;
  /** Steers that crossed their turn's end and started a turn of their own, which no prompt covers. */
  orphanTurns: number;
}

/**
 * One `_spark/steer` or `session/cancel` at `trial.moment` of a `session/prompt`: the steer is
 * answered once within the deadline (`{}` or a refusal), the prompt resolves within the deadline
 * after `session/cancel` (`cancelled`, or `end_turn` when it had ended), nothing of it streams after
 * it resolved, and every turn the thread started (a steer that crossed its turn's end starts one of
 * its own) ends within the deadline.
 */
export async function acpTrial(
  trial: Trial,
  options: { random: () => number; deadlineMs: number },
  session: AcpSoakSession,
  tally: AcpTally,
): Promise<void> {
  const { random, deadlineMs } = options;
  const { acp, sessionId, observer } = session;
  const chunks = () => acp.of(sessionId, "agent_message_chunk").length;
  const from = observer.events.length;
  const before = chunks();
  let chunksAtEnd: number | null = null;
  try {
    const prompt = acp.agent
      .request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Tell me a story." }] })
      .then(({ stopReason }) => {
        chunksAtEnd = chunks();
        return stopReason;
      });
    prompt.catch(() => undefined);
    const ended = prompt.then(
      () => undefined,
      () => undefined,
    );
    if (trial.moment !== "before_first_token") {
      const wanted = before + 1 + Math.floor(random() * 15);
      await Promise.race([
        within(
          acp.until(() => chunks() >= wanted),
          deadlineMs * 2,
          "agent message chunks",
        ).catch(() => undefined),
        ended,
      ]);
    }
    if (trial.action === "steer") {
      if (chunksAtEnd !== null) tally.late++;
      const answer = await within(
        acp.agent.request("_spark/steer", { sessionId, prompt: [{ type: "text", text: STEER_TEXT }] }).then(
          () => "steered" as const,
          (error: unknown) => {
            if (error instanceof RequestError) return "refused" as const;
            throw error;
          },
        ),
        deadlineMs,
        "an answer to _spark/steer",
      );
      tally[answer]++;
    }
    await acp.agent.notify("session/cancel", { sessionId });
    const stop = await within(prompt, deadlineMs, "the prompt's end after session/cancel");
    if (stop !== "cancelled" && stop !== "end_turn" && stop !== "max_turn_requests")
      throw new Error(`the prompt ended ${stop}`);
    // Every turn the thread started ends: one no prompt covers is interrupted from the host side.
    await settleTurns(observer, from, sessionId, deadlineMs, tally);
    // A round trip through spark acp: anything it still had to send has arrived.
    await acp.agent
      .request("_spark/steer", { sessionId, prompt: [{ type: "text", text: "ping" }] })
      .catch(() => undefined);
    const late = chunks() - (chunksAtEnd ?? chunks());
    const orphanChunks = observer.events
      .slice(from)
      .some((event) => event.type === "turn.started" && event.input === STEER_TEXT);
    if (late > 0 && !orphanChunks) throw new Error(`${late} message chunks after the prompt resolved`);
  } catch (error) {
    throw new Error(
      `acp ${trial.action} ${trial.moment}: ${(error as Error).message}; host events: ${observer.tail(12)}`,
    );
  }
}

/** Waits until every turn started since `from` completed; a turn no prompt covers is interrupted. */
async function settleTurns(
  observer: EventSocket,
  from: number,
  threadId: string,
  deadlineMs: number,
  tally: AcpTally,
): Promise<void> {
  const interrupted = new Set<string>();
  for (let round = 0; ; round++) {
    // A round trip on the observer's own socket: it has every event the host sent before.
    const request = `settle-${from}-${round}`;
    const pong = observer.next(
      (event) => event.type === "ack" && event.request_id === request,
      deadlineMs,
      "the observer's round trip",
    );
    observer.send({ type: "thread.list", request_id: request });
    await pong;
    const events = observer.events.slice(from);
    const open = events.filter(
      (event) =>
        event.type === "turn.started" &&
        !events.some((end) => end.type === "turn.completed" && end.turn_id === event.turn_id),
    );
    if (open.length === 0) return;
    for (const event of open) {
      const turn = String(event.turn_id);
      const end = observer.next(
        (e) => e.type === "turn.completed" && e.turn_id === turn,
        deadlineMs * 4,
        `turn.completed of ${turn}`,
        from,
      );
      if (event.input === STEER_TEXT && !interrupted.has(turn)) {
        interrupted.add(turn);
        tally.orphanTurns++;
        observer.send({ type: "turn.interrupt", thread_id: threadId });
      }
      await end;
    }
  }
}

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
