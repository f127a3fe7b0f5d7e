import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The built web app (`npm run build:web` writes it to `dist/web/app/`), or null when it has not
 * been built. Resolves alike from `src/web/` (tests) and `dist/web/` (the installed package).
 */
export function webAppDir(): string | null {
  const dir = fileURLToPath(new URL("../../dist/web/app/", import.meta.url));
  return existsSync(path.join(dir, "index.html")) ? dir : null;
}

/**
 * The address a person opens: the server's root, with the API key in the fragment (never sent to
 * any server, kept out of logs and referrers; the page offers it to the WebSocket itself).
 */
export function webAppUrl(serverUrl: string, apiKey?: string): string {
  return `${serverUrl}/${apiKey ? `#key=${encodeURIComponent(apiKey)}` : ""}`;
}

/** Opens `url` in the default browser; resolves false when no opener could be started. */
export function openBrowser(url: string, platform: NodeJS.Platform = process.platform): Promise<boolean> {
  const [command, args] =
    platform === "darwin"
      ? ["open", [url]]
      : platform === "win32"
        ? ["cmd", ["/c", "start", '""', url.replaceAll("&", "^&")]]
        : ["xdg-open", [url]];
  return new Promise((resolve) => {
    const child = spawn(command, args as string[], { stdio: "ignore", detached: true });
    child.once("error", () => resolve(false));
    child.once("spawn", () => {
      child.unref();
      resolve(true);
    });
  });
}
