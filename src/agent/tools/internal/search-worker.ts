/**
 * The worker thread that matches search patterns, so that no pattern or file size can hold the
 * agent's event loop: the main side ends it on abort or when the search's time budget runs out.
 * Regular expressions run on RE2 (re2js), in time linear in the text. Self-contained on purpose
 * (no relative imports): Node loads it as is, from dist/ or, under the tests, from the .ts source.
 */
import { parentPort, workerData } from "node:worker_threads";
import { RE2JS } from "re2js";

/** What the worker is started with. */
export interface SearchWorkerData {
  pattern: string;
  regex: boolean;
  /** Characters of a matching line sent back; longer lines are cut around the match. */
  maxLineChars: number;
}

/** A request: the matching lines of one file's text, at most `limit`. */
export interface SearchWorkerRequest {
  text: string;
  limit: number;
}

export interface SearchWorkerMatch {
  /** 1-based line number. */
  line: number;
  /** The line, cut to maxLineChars around the match. */
  text: string;
}

/** The first message is `ready` or `invalid`; every request is answered by one `matches`. */
export type SearchWorkerReply =
  | { type: "ready" }
  | { type: "invalid"; message: string }
  | { type: "matches"; matches: SearchWorkerMatch[] };

/** Where a line matches: the index of the first match, or -1. */
type Matcher = (line: string) => number;

function matcherFor(pattern: string, regex: boolean): Matcher {
  if (!regex) return (line) => line.indexOf(pattern);
  const compiled = RE2JS.compile(pattern);
  return (line) => {
    // The DFA behind test() is the fast path; only a matching line pays for the match position.
    if (!compiled.test(line)) return -1;
    const found = compiled.matcher(line);
    return found.find() ? found.start() : 0;
  };
}

function matchLines(
  text: string,
  matches: Matcher,
  limit: number,
  maxLineChars: number,
): SearchWorkerMatch[] {
  const found: SearchWorkerMatch[] = [];
  let line = 0;
  let start = 0;
  while (start < text.length && found.length < limit) {
    line++;
    let end = text.indexOf("\n", start);
    if (end === -1) end = text.length;
    const content = text.slice(start, end > start && text[end - 1] === "\r" ? end - 1 : end);
    const index = matches(content);
    if (index !== -1) found.push({ line, text: excerpt(content, index, maxLineChars) });
    start = end + 1;
  }
  return found;
}

/** The line, cut to `max` characters around the match so the match stays visible. */
function excerpt(text: string, index: number, max: number): string {
  if (text.length <= max) return text;
  const from = index + 50 > max ? Math.max(0, index - 100) : 0;
  const cut = text.slice(from, from + max);
  return `${from > 0 ? "…" : ""}${cut}${from + max < text.length ? "…" : ""}`;
}

function serve(port: NonNullable<typeof parentPort>, data: SearchWorkerData): void {
  const reply = (message: SearchWorkerReply) => port.postMessage(message);
  let matches: Matcher;
  try {
    matches = matcherFor(data.pattern, data.regex);
  } catch (error) {
    reply({ type: "invalid", message: (error as Error).message });
    return;
  }
  port.on("message", (request: SearchWorkerRequest) => {
    reply({ type: "matches", matches: matchLines(request.text, matches, request.limit, data.maxLineChars) });
  });
  reply({ type: "ready" });
}

if (parentPort) serve(parentPort, workerData as SearchWorkerData);
