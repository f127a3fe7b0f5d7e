import { render } from "preact";
import { App } from "./app.js";
import { AppStore } from "./app-store.js";
import "./app.css";
import "./layout.css";
import "./conversation.css";

/**
 * Reads `#key=…` (the API key `spark serve` prints, never sent to a server) and `#thread=…` from
 * the address. The key moves to this tab's session storage and out of the address bar.
 */
function fromFragment(): { key: string | null; threadId: string | null } {
  const params = new URLSearchParams(location.hash.slice(1));
  const given = params.get("key");
  if (given) sessionStorage.setItem("spark.key", given);
  return { key: given ?? sessionStorage.getItem("spark.key"), threadId: params.get("thread") };
}

const { key, threadId } = fromFragment();
const setAddress = (id: string | null) =>
  history.replaceState(null, "", `${location.pathname}${location.search}${id ? `#thread=${id}` : ""}`);
setAddress(threadId);
const store = new AppStore({
  url: `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/v1/agent`,
  key,
  threadId,
  onThreadChange: setAddress,
});
render(<App store={store} />, document.getElementById("app")!);
