import type { FromWebview } from "./messages.js";

declare function acquireVsCodeApi(): { postMessage(message: FromWebview): void };

/** The extension's side of the webview; acquired once per page, as VS Code requires. */
const vscode = acquireVsCodeApi();

/** Sends a message to the extension (see FromWebview). */
export const post = (message: FromWebview) => vscode.postMessage(message);
