import { agentsLines, skillsLines } from "../../client-core/catalog-lines.js";
import { rewindPoints } from "../../client-core/rewind-points.js";
import type { TerminalThread } from "../terminal-thread.js";
import { forkTarget } from "./fork-command.js";
import type { RewindPicker } from "./rewind-picker.js";
import { helpLines, type SlashCommand } from "./slash-commands.js";
import type { McpServersFeed, TuiOptions } from "./tui-options.js";
import type { TuiSession } from "./tui-session.js";

const NO_CATALOG = { skills: [], agents: [] };

/** What a slash command acts on: the view's state (read and written as keys arrive) and its operations. */
export interface SlashCommandContext {
  state: {
    readonly session: TuiSession;
    readonly mcp: McpServersFeed | null;
    rewind: RewindPicker | null;
    readonly exited: boolean;
  };
  options: TuiOptions;
  quit(): void;
  rerender(): void;
  /** Runs UI work that replaces the session; input waits until it is done, and an error is shown. */
  runActivity(label: string, work: () => Promise<void>): void;
  /** Continues in `thread` (a new session, a fork, another model); `clear` clears the screen. */
  switchTo(thread: TerminalThread, modelId: string, clear: boolean): void;
}

/** Carries out a slash command entered at the prompt; what it has to say is a notice. */
export function runSlashCommand(ctx: SlashCommandContext, command: SlashCommand) {
  const { state: s, options } = ctx;
  const { thread, store: current } = s.session;
  if (command.name === "help") return current.notice(helpLines().join("\n"));
  if (command.name === "exit") return ctx.quit();
  if (command.name === "mcp") {
    if (options.mcp && !s.mcp) return current.notice("/mcp works once Spark has started.", "warn");
    return current.showMcpServers(s.mcp?.mcpServers ?? []);
  }
  if (command.name === "skills") {
    if (options.mcp && !s.mcp) return current.notice("/skills works once Spark has started.", "warn");
    return current.notice(skillsLines(s.mcp?.catalog ?? NO_CATALOG).join("\n"));
  }
  // Works while the session starts too, as Shift+Tab does.
  if (command.name === "plan") return setPlanMode(ctx, command.args);
  if (!thread) {
    current.notice(`/${command.name} works once the session has started.`, "warn");
    return;
  }
  switch (command.name) {
    case "undo":
      thread.undo().then(
        (paths) =>
          current.notice(
            paths.length > 0 ? `Undid the last patch: restored ${paths.join(", ")}` : "Nothing to undo.",
          ),
        (error: unknown) =>
          current.notice(`Undo failed: ${error instanceof Error ? error.message : String(error)}`, "error"),
      );
      return;
    case "rewind": {
      if (thread.busy)
        return current.notice("A turn is running; interrupt it (Esc) before rewinding.", "warn");
      const points = rewindPoints(current.coreEntries);
      if (points.length === 0) return current.notice("Nothing to rewind yet.", "warn");
      s.rewind = { step: "turn", points, index: 0 };
      ctx.rerender();
      return;
    }
    case "new":
      ctx.runActivity("starting a new session", async () => {
        if (thread.busy) thread.interrupt();
        const next = await options.newThread();
        if (s.exited) return;
        ctx.switchTo(next, s.session.modelId, true);
        s.session.store.notice("New session.", "dim");
      });
      return;
    case "fork": {
      const target = forkTarget(command.args, thread.history);
      if ("lines" in target) return current.notice(target.lines.join("\n"));
      const fork = options.onFork;
      if (!fork) return current.notice("Forking is not available here.", "warn");
      if (thread.busy) return current.notice("A turn is running; fork once it ends.", "warn");
      ctx.runActivity(`forking from turn ${target.number}`, async () => {
        const next = await fork(target.itemId);
        if (s.exited) return;
        ctx.switchTo(next, s.session.modelId, true);
        s.session.store.notice(`Forked from turn ${target.number}: ${next.info.title}.`, "dim");
      });
      return;
    }
    case "model":
      changeModel(ctx, command.args);
      return;
    case "agents": {
      const subs = thread.subAgents;
      current.notice(
        [
          ...agentsLines(s.mcp?.catalog ?? NO_CATALOG),
          ...(subs.length === 0
            ? ["No sub-agents in this session."]
            : subs.map(
                (sub) =>
                  `${sub.id} ${sub.status} on ${sub.model}: ${sub.task} (${sub.progress}, ${sub.outputTokens} tok)`,
              )),
        ].join("\n"),
      );
      return;
    }
    case "compact":
      if (thread.busy) return current.notice("A turn is running; compact once it ends.", "warn");
      // The thread says how it went (a notice and the meter); only a failure is said here.
      thread
        .compact(command.args || undefined)
        .catch((error: unknown) =>
          current.notice(
            `Compact failed: ${error instanceof Error ? error.message : String(error)}`,
            "error",
          ),
        );
      return;
    case "cancel": {
      const running = thread.subAgents.filter((sub) => sub.status === "running");
      const id = command.args || running.at(-1)?.id;
      if (!id || !thread.cancelSubAgent(id))
        current.notice(id ? `No running sub-agent ${id}.` : "No sub-agent is running.", "warn");
      return;
    }
    case "review": {
      const review = options.onReview;
      if (!review)
        return current.notice("/review is not available here; run spark review in the workspace.", "warn");
      current.notice("Reviewing (read-only: the model may read files, never edit or run them)...", "dim");
      review(thread.info.id, command.args, (step) => current.notice(step, "dim")).then(
        (report) => current.notice(report),
        (error: unknown) =>
          current.notice(`Review failed: ${error instanceof Error ? error.message : String(error)}`, "error"),
      );
      return;
    }
    case "diff": {
      const diff = options.onDiff;
      if (!diff) return current.notice("/diff is not available here.", "warn");
      diff(thread.info.id).then(
        (changes) => current.showDiff(changes),
        (error: unknown) =>
          current.notice(`Diff failed: ${error instanceof Error ? error.message : String(error)}`, "error"),
      );
      return;
    }
    default: {
      const unknown: never = command.name;
      void unknown;
    }
  }
}

/** `/model [name]`: shows the model, or switches the following turns to `name`. */
function changeModel(ctx: SlashCommandContext, name: string): void {
  const { state: s, options } = ctx;
  const { modelId, store: current, thread } = s.session;
  if (!thread) return;
  // No list (a host that sends none): the agent host has it, and refuses a name it does not serve.
  const listed = options.models?.() ?? [];
  const models = listed.length > 0 ? listed : undefined;
  const only = models?.length === 1;
  const others = models && !only ? ` Available: ${models.join(", ")}.` : "";
  const change = only ? undefined : options.onModelChange;
  const shown = modelId || "the server's default";
  if (!name) {
    current.notice(
      only
        ? `Model: ${shown}, the only model here (more are declared as [tiers] in config.toml).`
        : `Model: ${shown}.${others}${change ? " Switch with /model <name>." : ""}`,
    );
    return;
  }
  if (name === modelId) {
    current.notice(`Already using ${modelId}.`);
    return;
  }
  if (!change) {
    current.notice(
      only
        ? `Unknown model '${name}': ${shown} is the only model here (more are declared as [tiers] in config.toml).`
        : `Switching models is not available here; the model is ${shown}.`,
      only ? "error" : "warn",
    );
    return;
  }
  if (models && !models.includes(name)) {
    current.notice(`Unknown model '${name}'.${others}`, "error");
    return;
  }
  ctx.runActivity(`switching to ${name}`, async () => {
    if (thread.busy) thread.interrupt();
    const next = await change(name);
    if (s.exited) return;
    ctx.switchTo(next, name, false);
    s.session.store.notice(`Switched to ${name}.`);
  });
}

/** `/plan`: plan mode on or off for the next turns, as Shift+Tab; `/plan on`, `/plan off` set it. */
function setPlanMode(ctx: SlashCommandContext, args: string): void {
  const session = ctx.state.session;
  const arg = args.toLowerCase();
  if (arg !== "" && arg !== "on" && arg !== "off") {
    session.store.notice(`Unknown argument '${args}': /plan, /plan on or /plan off.`, "error");
    return;
  }
  const plan = arg === "" ? session.mode !== "plan" : arg === "on";
  session.setMode(plan ? "plan" : "default");
  session.store.notice(
    plan
      ? "Plan mode on: edits and commands are refused, the model answers with a plan (/plan off or Shift+Tab to implement)."
      : "Plan mode off: the model may edit and run commands again.",
    "dim",
  );
  ctx.rerender();
}
