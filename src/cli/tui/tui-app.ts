import { Box, type Key, Static, useInput, usePaste, useStdout } from "ink";
import React, { useEffect, useReducer, useRef, useSyncExternalStore } from "react";
import type { McpServerInfo, McpServerState } from "../../protocol/agent.js";
import { DraftPacer } from "../../protocol/draft-pacer.js";
import type { TerminalThread } from "../terminal-thread.js";
import {
  applyCompletion,
  type CompletionMenu,
  commandCompletions,
  completionTarget,
  MAX_COMPLETIONS,
  moveSelection,
} from "./completion-menu.js";
import { CompletionMenuView } from "./completion-menu-view.js";
import type { ConversationStoreOptions, Entry } from "./conversation-store.js";
import { EntryView } from "./entry-view.js";
import { editKey, pickerKeyOf } from "./key-bindings.js";
import { type EditorState, EMPTY_EDITOR, edit, InputHistory } from "./line-editor.js";
import { LiveView } from "./live-view.js";
import { mcpServerNotices } from "./mcp-server-notices.js";
import { PromptBox } from "./prompt-box.js";
import { type PickerKey, pickerKey, type RewindPicker, RewindPickerView } from "./rewind-picker.js";
import { runSlashCommand, type SlashCommandContext } from "./slash-command-actions.js";
import { parseSlashCommand } from "./slash-commands.js";
import { type StartupState, startupLabel } from "./startup-status.js";
import { StartupView } from "./startup-view.js";
import { placeLabel, StatusBar } from "./status-bar.js";
import type { McpServersFeed, TuiOptions } from "./tui-options.js";
import { TuiSession } from "./tui-session.js";

const h = React.createElement;

/** A second Ctrl+C within this long quits. */
const QUIT_WINDOW_MS = 2000;
/** How often the elapsed time redraws while the agent works. */
const TICK_MS = 200;
/** Clears the screen and the scrollback (for /new). */
const CLEAR_SCREEN = "\x1b[2J\x1b[3J\x1b[H";

export interface TuiAppProps {
  options: TuiOptions;
  session: TuiSession;
  /**
   * Called once, when the person quits, with the thread shown last (null: none had started); the
   * current session is already closed.
   */
  onExit: (last: TerminalThread | null) => void;
  storeOptions?: ConversationStoreOptions;
}

interface AppState {
  session: TuiSession;
  editor: EditorState;
  history: InputHistory;
  quitArmedAt: number | null;
  /** What the UI itself is busy with (a new session, a model switch); input waits meanwhile. */
  activity: string | null;
  /** Messages entered before the first thread exists; sent in order, once each, when it does. */
  pending: string[];
  /** The first thread could not be started: nothing can be sent. */
  failed: boolean;
  exited: boolean;
  /** Type-ahead: sends the message being typed to the thread as a draft of its next turn. */
  drafts: DraftPacer;
  /** Where the MCP servers are listed from, once it is there. */
  mcp: McpServersFeed | null;
  /** Each MCP server's last state, so a failure is announced once. */
  mcpSeen: Map<string, McpServerState>;
  /** `/rewind`'s picker while it is open: it takes the arrows, Enter and Esc. */
  rewind: RewindPicker | null;
  /** The `/command` or `@file` candidates for the word at the cursor: they take the arrows, Tab, Enter and Esc. */
  menu: CompletionMenu | null;
  /** The prompt's text when Esc closed the menu: it stays closed until the text changes. */
  menuClosedAt: string | null;
  /** Counts `@` file queries, so only the answer to the latest one opens the menu. */
  fileQueries: number;
}

const NO_STARTUP: StartupState = { phase: "starting" };
const noStartup = () => () => {};

/**
 * The interactive view: the conversation (finished entries printed once), the live part, the
 * prompt and the status line. A pure view and input layer over {@link TerminalThread} (in-process or on an agent host): keys become
 * submit / enqueue / interrupt / respondToApproval / undo calls, events become entries.
 */
export function TuiApp({ options, session, onExit, storeOptions }: TuiAppProps): React.ReactElement {
  const { stdout, write } = useStdout();
  const ref = useRef<AppState | null>(null);
  ref.current ??= {
    session,
    editor: EMPTY_EDITOR,
    history: new InputHistory(),
    quitArmedAt: null,
    activity: null,
    pending: [],
    failed: false,
    exited: false,
    drafts: new DraftPacer((text) => void ref.current?.session.thread?.draft(text)),
    mcp: null,
    mcpSeen: new Map(),
    rewind: null,
    menu: null,
    menuClosedAt: null,
    fileQueries: 0,
  };
  // Key handlers read and write this object, never a render's closure: several keys can arrive
  // before React renders again.
  const s = ref.current;
  const [, rerender] = useReducer((n: number) => n + 1, 0);
  const store = s.session.store;
  const view = useSyncExternalStore(store.subscribe, store.getSnapshot);
  const startup = useSyncExternalStore(
    options.startup?.subscribe ?? noStartup,
    options.startup?.getSnapshot ?? (() => NO_STARTUP),
  );
  const starting = s.session.thread === null;
  const busy = view.phase !== "idle" || s.activity !== null;

  const drawnAt = useRef(0);
  drawnAt.current = performance.now();
  useEffect(() => {
    if (!busy) return;
    // While the model streams, its frames redraw the time already: a tick only fills a pause.
    const timer = setInterval(() => {
      if (performance.now() - drawnAt.current >= TICK_MS / 2) rerender();
    }, TICK_MS);
    return () => clearInterval(timer);
  }, [busy]);

  /** Sets the prompt; `complete: false` (history, a rewound message) leaves the completion menu closed. */
  const setEditor = (editor: EditorState, { complete = true }: { complete?: boolean } = {}) => {
    s.editor = editor;
    s.drafts.update(editor.text);
    if (complete) refreshMenu();
    else s.menu = null;
    rerender();
  };

  /** Opens, updates or closes the completion menu for the word at the cursor. */
  const refreshMenu = () => {
    const target = completionTarget(s.editor);
    if (s.menuClosedAt !== null && s.menuClosedAt !== s.editor.text) s.menuClosedAt = null;
    if (!target || s.menuClosedAt !== null) {
      s.menu = null;
      return;
    }
    if (target.kind === "command") {
      const items = commandCompletions(target.query);
      const complete = items.length === 1 && items[0]!.value === `/${target.query.toLowerCase()}`;
      s.menu = items.length > 0 && !complete ? { target, items, selected: 0 } : null;
      return;
    }
    const thread = s.session.thread;
    if (!options.files || !thread) {
      s.menu = null;
      return;
    }
    const query = ++s.fileQueries;
    // The menu shown stays (on its old word) until the answer: typing does not flicker it.
    options.files(thread.info.id, target.query, MAX_COMPLETIONS).then(
      (files) => {
        if (query !== s.fileQueries || s.exited) return;
        const current = completionTarget(s.editor);
        if (current?.kind !== "file" || s.menuClosedAt !== null) return;
        s.menu =
          files.length > 0
            ? { target: current, items: files.map((file) => ({ value: `@${file}` })), selected: 0 }
            : null;
        rerender();
      },
      () => {}, // no list: no menu
    );
  };

  /** A key while the completion menu is open; false: not one of its keys. */
  const onMenuKey = (menu: CompletionMenu, key: Key): boolean => {
    if (key.upArrow || key.downArrow) {
      s.menu = moveSelection(menu, key.upArrow ? -1 : 1);
      rerender();
      return true;
    }
    if (key.escape) {
      s.menu = null;
      s.menuClosedAt = s.editor.text;
      rerender();
      return true;
    }
    if ((key.tab && !key.shift) || (key.return && !key.meta)) {
      const completed = applyCompletion(s.editor, menu);
      s.menu = null;
      if (menu.target.kind === "command" && key.return) {
        // Enter runs the command chosen, as typed in full.
        s.editor = edit.set(completed.text.trimEnd());
        submit("send");
        return true;
      }
      setEditor(completed);
      return true;
    }
    return false;
  };

  const quit = () => {
    if (s.exited) return;
    s.exited = true;
    const last = s.session.thread;
    if (last?.busy) last.interrupt();
    s.session.close();
    onExit(last);
  };

  const switchTo = (thread: TerminalThread, modelId: string, clear: boolean) => {
    s.session.close();
    s.session = new TuiSession(thread, modelId, storeOptions);
    if (clear && (stdout as NodeJS.WriteStream).isTTY) write(CLEAR_SCREEN);
    rerender();
  };

  /** Runs UI work that replaces the session; input waits until it is done. */
  const runActivity = (label: string, work: () => Promise<void>) => {
    s.activity = label;
    rerender();
    work()
      .catch((error: unknown) => s.session.store.notice(`Error: ${messageOf(error)}`, "error"))
      .finally(() => {
        s.activity = null;
        if (!s.exited) rerender();
      });
  };

  const commands: SlashCommandContext = { state: s, options, quit, rerender, runActivity, switchTo };

  const submit = (mode: "send" | "queue") => {
    const text = s.editor.text.trim();
    if (!text || s.activity) return;
    s.history.push(text);
    s.drafts.reset();
    setEditor(EMPTY_EDITOR);
    const command = parseSlashCommand(text);
    if (command && "unknown" in command) {
      s.session.store.notice(`Unknown command ${command.unknown}. /help lists the commands.`, "warn");
      return;
    }
    if (command) {
      runSlashCommand(commands, command);
      return;
    }
    const thread = s.session.thread;
    if (!thread) {
      if (s.failed)
        s.session.store.notice("Spark did not start; nothing can be sent. Ctrl+C twice quits.", "error");
      else s.pending.push(text);
      rerender();
      return;
    }
    try {
      if (mode === "queue") thread.enqueue(text);
      else thread.submit(text);
    } catch (error) {
      s.session.store.notice(`Error: ${messageOf(error)}`, "error");
    }
  };

  /** Esc, and Ctrl+C on an empty prompt: stops the running turn, or drops what waits for the start. */
  const interrupt = () => {
    const thread = s.session.thread;
    if (thread?.busy) {
      thread.interrupt();
      s.session.store.markInterrupting();
    } else if (!thread && s.pending.length > 0) {
      const dropped = s.pending.splice(0).length;
      s.session.store.notice(`${dropped} queued message${dropped > 1 ? "s" : ""} dropped.`, "dim");
    }
  };

  /** A key while `/rewind`'s picker is open; Enter on what to take back sends the rewind. */
  const onPickerKey = (picker: RewindPicker, key: PickerKey) => {
    const { state, chosen } = pickerKey(picker, key);
    s.rewind = state;
    rerender();
    const { thread, store: current } = s.session;
    if (!chosen || !thread) return;
    thread.rewind(chosen.point.id, chosen.restore).then(
      ({ text }) => {
        // The conversation went back: the message returns to the prompt, to edit and send again.
        if (chosen.restore !== "code" && s.editor.text === "") setEditor(edit.set(text), { complete: false });
      },
      (error: unknown) => current.notice(`Rewind refused: ${messageOf(error)}`, "error"),
    );
  };

  const onCtrlC = () => {
    if (s.editor.text !== "") {
      s.quitArmedAt = null;
      setEditor(EMPTY_EDITOR);
      return;
    }
    const now = performance.now();
    if (s.quitArmedAt !== null && now - s.quitArmedAt < QUIT_WINDOW_MS) {
      quit();
      return;
    }
    interrupt();
    s.quitArmedAt = now;
    rerender();
    setTimeout(() => {
      if (s.quitArmedAt !== now || s.exited) return;
      s.quitArmedAt = null;
      rerender();
    }, QUIT_WINDOW_MS).unref();
  };

  const onKey = (input: string, key: Key) => {
    if (s.exited) return;
    // Keys typed faster than they are read (a slow link, a macro) arrive as one chunk: "ls\r" is
    // the text and then Enter. Typed while Spark starts, before the terminal is in raw mode, Enter
    // arrives as "\n" (the terminal's own translation). (Pastes come through usePaste, newlines
    // and all; a lone "\n" is Ctrl+J, a new line.)
    if (!key.return && !key.ctrl && !key.meta && input.length > 1 && /[\r\n]/.test(input)) {
      const parts = input.split(/\r\n?|\n/);
      parts.forEach((part, index) => {
        if (part) onKey(part, { ...key });
        if (index < parts.length - 1) onKey("\r", { ...key, return: true });
      });
      return;
    }
    if (s.rewind) {
      const pick = pickerKeyOf(key);
      if (pick) return onPickerKey(s.rewind, pick);
      if (!(key.ctrl && input === "c")) return;
      s.rewind = null;
    }
    if (key.ctrl && input === "c") return onCtrlC();
    if (key.ctrl && input === "d") {
      if (s.editor.text === "") return quit();
      return setEditor(edit.deleteForward(s.editor));
    }
    if (s.quitArmedAt !== null) {
      s.quitArmedAt = null;
      rerender();
    }
    const yesOrNo = s.editor.text === "" && !key.ctrl && !key.meta && /^[yn]$/i.test(input);
    // A start-up question: only an explicit y is yes; n or Enter on an empty prompt is no.
    const question = options.startup?.state;
    if (question?.phase === "asking" && s.editor.text === "" && (yesOrNo || key.return)) {
      const yes = input.toLowerCase() === "y";
      options.startup!.answer(yes);
      s.session.store.notice(yes ? question.answered.yes : question.answered.no, yes ? "info" : "dim");
      return;
    }
    const approval = s.session.store.pendingApproval;
    if (approval && yesOrNo) {
      s.session.thread?.respondToApproval(approval.approval_id, input.toLowerCase() === "y");
      return;
    }
    if (s.menu && onMenuKey(s.menu, key)) return;
    if (key.escape) return interrupt();
    if (key.return) {
      const before = s.editor.text.slice(0, s.editor.cursor);
      if (key.meta) return setEditor(edit.insert(s.editor, "\n"));
      // A backslash before Enter continues the message on a new line.
      if (before.endsWith("\\")) return setEditor(edit.insert(edit.backspace(s.editor), "\n"));
      return submit("send");
    }
    // Shift+Tab: plan mode on or off for the next turns (as in Claude Code).
    if (key.tab && key.shift) {
      s.session.setMode(s.session.mode === "plan" ? "default" : "plan");
      return rerender();
    }
    if (key.tab) return submit("queue");
    if (key.upArrow) {
      const previous = s.history.previous(s.editor.text);
      if (previous !== null) setEditor(edit.set(previous), { complete: false });
      return;
    }
    if (key.downArrow) {
      const next = s.history.next();
      if (next !== null) setEditor(edit.set(next), { complete: false });
      return;
    }
    const editing = editKey(input, key);
    if (editing) return setEditor(editing(s.editor));
    if (key.ctrl || key.meta) return;
    if (input) setEditor(edit.insert(s.editor, input));
  };

  useInput(onKey);
  useEffect(() => () => s.session.close(), [s]);
  usePaste((text) => {
    if (!s.exited) setEditor(edit.insert(s.editor, text));
  });

  // A server that fails or stops is announced in one line, without waiting for /mcp.
  useEffect(() => {
    const feed = options.mcp;
    if (!feed) return;
    let stop = () => {};
    let gone = false;
    const announce = (servers: readonly McpServerInfo[]) => {
      for (const text of mcpServerNotices(s.mcpSeen, servers)) s.session.store.notice(text, "warn");
    };
    const follow = (ready: McpServersFeed) => {
      if (gone || s.exited) return;
      s.mcp = ready;
      announce(ready.mcpServers);
      stop = ready.on("mcp", announce);
    };
    // A start that fails is shown by the thread's own promise.
    if (feed instanceof Promise) feed.then(follow, () => {});
    else follow(feed);
    return () => {
      gone = true;
      stop();
    };
  }, [options.mcp, s]);

  useEffect(() => {
    const prompt = options.prompt?.trim();
    if (!prompt) return;
    if (s.session.thread) s.session.thread.submit(prompt);
    else {
      s.pending.push(prompt);
      rerender();
    }
  }, [options.prompt, s]);

  useEffect(() => {
    const first = options.thread;
    if (!(first instanceof Promise)) return;
    first.then(
      (thread) => {
        if (s.exited) return;
        s.session.attach(thread);
        // Each in order, once: the first starts a turn, the rest queue behind it.
        for (const text of s.pending.splice(0)) {
          try {
            thread.enqueue(text);
          } catch (error) {
            s.session.store.notice(`Error: ${messageOf(error)}`, "error");
          }
        }
        rerender();
      },
      (error: unknown) => {
        if (s.exited) return;
        s.failed = true;
        s.session.store.notice(`Spark could not start: ${messageOf(error)}`, "error");
        rerender();
      },
    );
  }, [options.thread, s]);

  const placeholder = starting
    ? "Type away: messages are sent once the model is ready"
    : s.activity
      ? "One moment..."
      : busy
        ? "Steer with Enter, queue with Tab, interrupt with Esc"
        : "Ask Spark, or /help";
  const startupActivity = !starting ? null : s.failed ? "failed to start" : startupLabel(startup);
  return h(
    Box,
    { flexDirection: "column" },
    h(EntryStatic, { key: s.session.id, items: view.entries as Entry[], children: renderEntry }),
    h(LiveView, { view }),
    starting ? h(StartupView, { state: startup, pending: s.pending }) : null,
    s.rewind ? h(RewindPickerView, { state: s.rewind }) : null,
    h(PromptBox, { editor: s.editor, placeholder }),
    s.menu ? h(CompletionMenuView, { menu: s.menu }) : null,
    h(StatusBar, {
      modelId: s.session.modelId,
      view,
      now: performance.now(),
      activity: s.activity ?? startupActivity,
      quitArmed: s.quitArmedAt !== null,
      plan: s.session.mode === "plan",
      place: placeLabel(s.session.info, options.workspace),
    }),
  );
}

const EntryStatic = Static<Entry>;

function renderEntry(entry: Entry): React.ReactElement {
  return h(EntryView, { key: entry.key, entry });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
