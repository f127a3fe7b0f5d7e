/**
 * A GBNF reader for tests: whether a grammar's `root` matches a whole text. It knows the subset
 * Spark's grammars use (literals, character classes, rule names, groups, `|`, `?`, `*`, `+`,
 * `{m}`, `{m,}`, `{m,n}`) and works on sets of end positions, so it is exact, not fast.
 */
type Node =
  | { kind: "literal"; text: string }
  | { kind: "class"; negated: boolean; ranges: [number, number][] }
  | { kind: "ref"; name: string }
  | { kind: "seq"; items: Node[] }
  | { kind: "alt"; options: Node[] }
  | { kind: "repeat"; node: Node; min: number; max: number };

export function gbnfMatches(grammar: string, text: string, start = "root"): boolean {
  const rules = parseGrammar(grammar);
  const memo = new Map<string, Set<number>>();
  const chars = [...text];
  const ends = (node: Node, from: number): Set<number> => {
    switch (node.kind) {
      case "literal": {
        const want = [...node.text];
        for (let i = 0; i < want.length; i++) if (chars[from + i] !== want[i]) return new Set();
        return new Set([from + want.length]);
      }
      case "class": {
        const ch = chars[from];
        if (ch === undefined) return new Set();
        const code = ch.codePointAt(0)!;
        const inside = node.ranges.some(([a, b]) => code >= a && code <= b);
        return inside !== node.negated ? new Set([from + 1]) : new Set();
      }
      case "ref": {
        const key = `${node.name}@${from}`;
        const known = memo.get(key);
        if (known) return known;
        const rule = rules.get(node.name);
        if (!rule) throw new Error(`no rule ${node.name}`);
        memo.set(key, new Set());
        const result = ends(rule, from);
        memo.set(key, result);
        return result;
      }
      case "seq": {
        let at = new Set([from]);
        for (const item of node.items) {
          const next = new Set<number>();
          for (const p of at) for (const e of ends(item, p)) next.add(e);
          at = next;
          if (at.size === 0) break;
        }
        return at;
      }
      case "alt": {
        const all = new Set<number>();
        for (const option of node.options) for (const e of ends(option, from)) all.add(e);
        return all;
      }
      case "repeat": {
        const all = new Set<number>();
        let at = new Set([from]);
        for (let count = 0; at.size > 0; count++) {
          if (count >= node.min) for (const p of at) all.add(p);
          if (count >= node.max) break;
          const next = new Set<number>();
          for (const p of at) for (const e of ends(node.node, p)) if (e > p || count < node.min) next.add(e);
          at = next;
          if (count > node.min + chars.length + 1) break;
        }
        return all;
      }
    }
  };
  return ends({ kind: "ref", name: start }, 0).has(chars.length);
}

function parseGrammar(grammar: string): Map<string, Node> {
  const rules = new Map<string, Node>();
  for (const line of grammar.split("\n")) {
    const at = line.indexOf(" ::= ");
    if (at < 0) continue;
    const parser = new Parser(line.slice(at + 5));
    rules.set(line.slice(0, at).trim(), parser.parseAll());
  }
  return rules;
}

class Parser {
  private at = 0;
  constructor(private readonly src: string) {}

  parseAll(): Node {
    const node = this.alt();
    this.space();
    if (this.at < this.src.length) throw new Error(`unexpected '${this.src.slice(this.at)}'`);
    return node;
  }

  private alt(): Node {
    const options = [this.seq()];
    for (this.space(); this.src[this.at] === "|"; this.space()) {
      this.at++;
      options.push(this.seq());
    }
    return options.length === 1 ? options[0]! : { kind: "alt", options };
  }

  private seq(): Node {
    const items: Node[] = [];
    for (;;) {
      this.space();
      const ch = this.src[this.at];
      if (ch === undefined || ch === "|" || ch === ")") break;
      items.push(this.postfix(this.atom()));
    }
    return { kind: "seq", items };
  }

  private postfix(node: Node): Node {
    for (;;) {
      const ch = this.src[this.at];
      if (ch === "?") node = { kind: "repeat", node, min: 0, max: 1 };
      else if (ch === "*") node = { kind: "repeat", node, min: 0, max: Number.POSITIVE_INFINITY };
      else if (ch === "+") node = { kind: "repeat", node, min: 1, max: Number.POSITIVE_INFINITY };
      else if (ch === "{") {
        const close = this.src.indexOf("}", this.at);
        const [lo, hi] = this.src.slice(this.at + 1, close).split(",");
        const min = Number(lo);
        const max = hi === undefined ? min : hi.trim() === "" ? Number.POSITIVE_INFINITY : Number(hi);
        node = { kind: "repeat", node, min, max };
        this.at = close;
      } else return node;
      this.at++;
    }
  }

  private atom(): Node {
    const ch = this.src[this.at]!;
    if (ch === "(") {
      this.at++;
      const node = this.alt();
      this.space();
      if (this.src[this.at] !== ")") throw new Error("unclosed group");
      this.at++;
      return node;
    }
    if (ch === '"') {
      this.at++;
      let text = "";
      while (this.src[this.at] !== '"') text += String.fromCodePoint(this.char());
      this.at++;
      return { kind: "literal", text };
    }
    if (ch === "[") {
      this.at++;
      const negated = this.src[this.at] === "^";
      if (negated) this.at++;
      const ranges: [number, number][] = [];
      while (this.src[this.at] !== "]") {
        const a = this.char();
        if (this.src[this.at] === "-" && this.src[this.at + 1] !== "]") {
          this.at++;
          ranges.push([a, this.char()]);
        } else ranges.push([a, a]);
      }
      this.at++;
      return { kind: "class", negated, ranges };
    }
    const name = /^[a-zA-Z0-9-]+/.exec(this.src.slice(this.at))?.[0];
    if (!name) throw new Error(`unexpected '${this.src.slice(this.at)}'`);
    this.at += name.length;
    return { kind: "ref", name };
  }

  /** One character of a literal or class, escapes decoded. */
  private char(): number {
    const ch = this.src.codePointAt(this.at)!;
    this.at += ch > 0xffff ? 2 : 1;
    if (ch !== 0x5c) return ch;
    const e = this.src[this.at++]!;
    const simple: Record<string, string> = {
      n: "\n",
      r: "\r",
      t: "\t",
      '"': '"',
      "\\": "\\",
      "]": "]",
      "-": "-",
      "[": "[",
    };
    if (e in simple) return simple[e]!.codePointAt(0)!;
    const width = e === "x" ? 2 : e === "u" ? 4 : e === "U" ? 8 : 0;
    if (!width) throw new Error(`unknown escape \\${e}`);
    const code = Number.parseInt(this.src.slice(this.at, this.at + width), 16);
    this.at += width;
    return code;
  }

  private space(): void {
    while (this.src[this.at] === " ") this.at++;
  }
}
