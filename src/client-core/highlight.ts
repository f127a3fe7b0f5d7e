/// <reference path="./internal/highlight-grammars.d.ts" />
import bash from "highlight.js/lib/languages/bash";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import go from "highlight.js/lib/languages/go";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import markdown from "highlight.js/lib/languages/markdown";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import shell from "highlight.js/lib/languages/shell";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import { createLowlight } from "lowlight";

/**
 * What a run of code is, in the few kinds every face styles: the terminal maps them to colours,
 * the web app and the VS Code webview to `tok-<kind>` CSS classes.
 */
export type CodeTokenKind =
  | "plain"
  | "keyword"
  | "string"
  | "number"
  | "literal"
  | "comment"
  | "type"
  | "title"
  | "attr"
  | "meta"
  | "add"
  | "remove";

/** A run of code with its kind; a block's tokens, joined, are its text. */
export interface CodeToken {
  kind: CodeTokenKind;
  text: string;
}

/**
 * Only common languages are registered, to keep the web bundle small; their aliases come with
 * them (ts, js, py, sh, html, yml, ...). A fence in another language shows plain.
 */
const lowlight = createLowlight({
  bash,
  css,
  diff,
  go,
  javascript,
  json,
  markdown,
  python,
  rust,
  shell,
  typescript,
  xml,
  yaml,
});

/** highlight.js scopes (the first part of a class name) and the kind each is shown as. */
const KINDS: Record<string, CodeTokenKind> = {
  keyword: "keyword",
  "selector-tag": "keyword",
  tag: "keyword",
  name: "keyword",
  built_in: "type",
  type: "type",
  class: "type",
  literal: "literal",
  number: "number",
  string: "string",
  regexp: "string",
  symbol: "string",
  char: "string",
  link: "string",
  comment: "comment",
  quote: "comment",
  doctag: "comment",
  title: "title",
  section: "title",
  attr: "attr",
  attribute: "attr",
  property: "attr",
  "selector-class": "attr",
  "selector-id": "attr",
  meta: "meta",
  bullet: "meta",
  addition: "add",
  deletion: "remove",
};

/** The code of a block as tokens, highlighted as `language`; plain when the language is unknown. */
export function highlight(code: string, language: string): CodeToken[] {
  const lang = language.toLowerCase();
  if (code === "" || !lang || !lowlight.registered(lang)) return code ? [{ kind: "plain", text: code }] : [];
  const tokens: CodeToken[] = [];
  const push = (kind: CodeTokenKind, text: string) => {
    const last = tokens.at(-1);
    if (last?.kind === kind) last.text += text;
    else tokens.push({ kind, text });
  };
  const visit = (node: HastNode, kind: CodeTokenKind) => {
    if (node.type === "text") push(kind, node.value);
    if (node.type !== "element" && node.type !== "root") return;
    const className = node.type === "element" ? node.properties.className : undefined;
    const scope = Array.isArray(className) ? String(className[0]) : "";
    for (const child of node.children) visit(child, KINDS[scope] ?? kind);
  };
  visit(lowlight.highlight(lang, code, { prefix: "" }), "plain");
  return tokens;
}

type HastRoot = ReturnType<typeof lowlight.highlight>;
type HastNode = HastRoot | HastRoot["children"][number];
