/** A run of code with its token class (`plain` is unstyled). */
export interface CodeToken {
  kind: "plain" | "keyword" | "string" | "number" | "comment" | "literal" | "add" | "remove" | "meta";
  text: string;
}

const KEYWORDS = new Set(
  (
    "abstract as async await break case catch class const continue def default defer del delete do elif else enum " +
    "except export extends finally fn for from func function go if impl implements import in instanceof interface " +
    "is lambda let loop match mod module mut namespace new not of or and package pass private protected pub public " +
    "raise readonly return self static struct super switch this throw trait try type typeof use var void where " +
    "while with yield local then end elseif done fi esac echo"
  ).split(" "),
);
const LITERALS = new Set("true false null undefined None True False nil NaN Infinity".split(" "));
const HASH_COMMENTS = new Set([
  "python",
  "py",
  "sh",
  "bash",
  "shell",
  "zsh",
  "console",
  "yaml",
  "yml",
  "toml",
  "ruby",
  "rb",
  "perl",
  "r",
  "dockerfile",
  "makefile",
  "make",
  "conf",
  "ini",
]);

/**
 * A small highlighter for the common tokens of most languages: comments, strings, numbers,
 * keywords and literals (plus added and removed lines for `diff`). It never fails: what it does
 * not know stays plain. Linear in the text, so it can run on every streamed frame.
 */
export function highlight(code: string, language: string): CodeToken[] {
  const lang = language.toLowerCase();
  if (lang === "diff" || lang === "patch") return diffTokens(code);
  const hash = HASH_COMMENTS.has(lang);
  const pattern = hash
    ? /(#[^\n]*)|("(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?)|(\b\d[\d_]*(?:\.\d+)?(?:e[+-]?\d+)?\b|\b0x[\da-f]+\b)|([A-Za-z_$][\w$]*)/gi
    : /(\/\/[^\n]*|\/\*[\s\S]*?(?:\*\/|$))|("(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?|`(?:[^`\\]|\\.)*`?)|(\b\d[\d_]*(?:\.\d+)?(?:e[+-]?\d+)?n?\b|\b0x[\da-f]+\b)|([A-Za-z_$][\w$]*)/gi;
  const tokens: CodeToken[] = [];
  let last = 0;
  const push = (kind: CodeToken["kind"], text: string) => {
    const previous = tokens.at(-1);
    if (previous && previous.kind === kind) previous.text += text;
    else tokens.push({ kind, text });
  };
  for (const match of code.matchAll(pattern)) {
    const [text, comment, string, number, word] = match;
    if (match.index > last) push("plain", code.slice(last, match.index));
    if (comment !== undefined) push("comment", text);
    else if (string !== undefined) push("string", text);
    else if (number !== undefined) push("number", text);
    else if (word !== undefined && KEYWORDS.has(word)) push("keyword", text);
    else if (word !== undefined && LITERALS.has(word)) push("literal", text);
    else push("plain", text);
    last = match.index + text.length;
  }
  if (last < code.length) push("plain", code.slice(last));
  return tokens;
}

function diffTokens(code: string): CodeToken[] {
  return code.split(/(?<=\n)/).map((line) => ({
    kind: line.startsWith("+")
      ? "add"
      : line.startsWith("-")
        ? "remove"
        : line.startsWith("@@")
          ? "meta"
          : "plain",
    text: line,
  }));
}
