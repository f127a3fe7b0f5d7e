import { useEffect, useState } from "preact/hooks";
import type { ConnectionStatus } from "../../client-core/host-client.js";
import type { AppStore } from "./app-store.js";
import { CatalogPanel } from "./catalog-panel.js";
import { Composer } from "./composer.js";
import { ContextMeter } from "./context-meter-view.js";
import { Conversation } from "./conversation.js";
import type { DiffMode } from "./diff-view.js";
import { McpServers } from "./mcp-servers.js";
import { modelLoadLabel, promptLabel } from "./model-status.js";
import { ReviewPanel } from "./review-panel.js";
import { SessionDiffPanel } from "./session-diff-panel.js";
import { SessionList } from "./session-list.js";
import { LatencyChart, TurnMeter } from "./stats-view.js";
import { SubAgents } from "./sub-agents.js";

function useStore(store: AppStore) {
  const [, setVersion] = useState(0);
  useEffect(() => store.subscribe(() => setVersion((v) => v + 1)), [store]);
  return store.state;
}

const STATUS_TEXT: Record<ConnectionStatus, string> = {
  idle: "Connecting…",
  connecting: "Connecting…",
  open: "Connected",
  reconnecting: "Reconnecting…",
  closed: "Disconnected",
};

export function App({ store }: { store: AppStore }) {
  const state = useStore(store);
  const view = store.current;
  const [diffMode, setDiffMode] = useState<DiffMode>(
    () => (localStorage.getItem("spark.diffMode") as DiffMode | null) ?? "unified",
  );
  const [sidebarOpen, setSidebarOpen] = useState(false);
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (event.key === "Escape" && !event.defaultPrevented) {
        if (sidebarOpen) setSidebarOpen(false);
        else store.interrupt();
      }
    };
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  }, [store, sidebarOpen]);
  const toggleDiff = () => {
    const next = diffMode === "unified" ? "split" : "unified";
    localStorage.setItem("spark.diffMode", next);
    setDiffMode(next);
  };
  const info = view ? (state.sessions.find((s) => s.id === view.id) ?? view.info) : null;
  const connected = state.status === "open";
  const modelLoading = modelLoadLabel(state.models);
  const preparing = promptLabel(state.prompt);
  const loading = modelLoading ?? preparing;
  const waitingFor = modelLoading
    ? "waiting for the model"
    : preparing
      ? "waiting for the agent prompt"
      : "starting";
  return (
    <div class={`app${sidebarOpen ? " sidebar-open" : ""}`} data-status={state.status}>
      <aside class="sidebar" id="sidebar">
        <SessionList
          sessions={state.sessions}
          currentId={state.currentId}
          onNew={(worktree) => {
            store.newThread(worktree ? { worktree } : {});
            setSidebarOpen(false);
          }}
          onOpen={(id) => {
            store.openThread(id);
            setSidebarOpen(false);
          }}
          onRename={(id, title) => store.rename(id, title)}
          onDelete={(id) => store.remove(id)}
        />
        <section class="stats" aria-label="Session latency and speed">
          <h2>This session</h2>
          <LatencyChart turns={view?.turns ?? []} />
        </section>
        <SubAgents agents={view?.subAgents ?? []} onCancel={(id) => store.cancelSubAgent(id)} />
        <McpServers servers={state.mcpServers} />
      </aside>
      <main class="main">
        <header class="topbar">
          <button
            type="button"
            class="icon-button sidebar-toggle"
            aria-controls="sidebar"
            aria-expanded={sidebarOpen}
            aria-label="Sessions"
            onClick={() => setSidebarOpen(!sidebarOpen)}
          >
            ☰
          </button>
          <h1 class="title">{info?.title ?? "Spark"}</h1>
          {info?.worktree ? (
            <span class="worktree-badge" title={`${info.worktree.branch} in ${info.cwd}`}>
              ⎇ {info.worktree.name}
            </span>
          ) : null}
          <span class="model" title="Model and tier">
            {info ? (
              <>
                <span class="model-name">{info.model || "default model"}</span>
                <span class="tier">{info.tier ?? "default"} tier</span>
              </>
            ) : null}
          </span>
          {loading ? (
            <span class="model-load" role="status" aria-live="polite">
              {loading}
            </span>
          ) : null}
          <TurnMeter view={view} />
          <ContextMeter view={view} />
          <button
            type="button"
            class="button small diff-toggle"
            onClick={toggleDiff}
            aria-pressed={diffMode === "split"}
          >
            {diffMode === "unified" ? "Side by side" : "Unified"}
          </button>
          <span class={`connection is-${state.status}`} role="status" aria-live="polite">
            {STATUS_TEXT[state.status]}
          </span>
        </header>
        {state.status !== "open" && state.statusDetail ? <p class="banner">{state.statusDetail}</p> : null}
        {view ? (
          <Conversation
            view={view}
            diffMode={diffMode}
            onResolve={(itemId, path, accept) => store.resolveFile(itemId, path, accept)}
            onImplement={connected ? () => store.implement() : null}
            onRewind={connected && !view.turn ? (itemId, restore) => store.rewind(itemId, restore) : null}
            onFork={connected ? (itemId) => store.fork(itemId) : null}
          />
        ) : (
          <div class="conversation">
            {state.pending.length === 0 ? (
              <p class="empty">Type below to start a session, or pick one from the list.</p>
            ) : (
              <ul class="queued" aria-label="Messages waiting for the session to start">
                {state.pending.map((message, i) => (
                  // biome-ignore lint/suspicious/noArrayIndexKey: the same text may wait twice; its place is its identity
                  <li key={i} class="queued-message">
                    <span class="badge badge-queued">{waitingFor}</span> {message}
                  </li>
                ))}
              </ul>
            )}
          </div>
        )}
        <div class="toasts" role="alert">
          {state.errors.map((error) => (
            <p class="toast" key={error.id}>
              {error.message}{" "}
              <button
                type="button"
                class="icon-button"
                aria-label="Dismiss"
                onClick={() => store.dismissError(error.id)}
              >
                ×
              </button>
            </p>
          ))}
        </div>
        {state.catalogShown ? (
          <CatalogPanel
            catalog={state.catalog}
            shown={state.catalogShown}
            onClose={() => store.closeCatalog()}
          />
        ) : null}
        {state.review ? <ReviewPanel shown={state.review} onClose={() => store.closeReview()} /> : null}
        {state.sessionDiff ? (
          <SessionDiffPanel diff={state.sessionDiff} mode={diffMode} onClose={() => store.closeDiff()} />
        ) : null}
        <Composer
          view={view}
          connected={connected}
          onSubmit={(text) => store.submit(text)}
          onQueue={(text) => store.queue(text)}
          onType={(text) => store.typing(text)}
          onStop={() => store.interrupt()}
          onUndo={() => store.undo()}
          onApprove={(id, approved) => store.approve(id, approved)}
          plan={state.plan}
          onPlan={(plan) => store.setPlan(plan)}
          refill={state.refill}
          onFiles={(query) => store.files(query)}
        />
      </main>
    </div>
  );
}
