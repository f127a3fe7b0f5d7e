/**
 * A deterministic GPT-2 style byte-level BPE vocabulary for synthetic models (`tokenizer.ggml.model =
 * "gpt2"`, `tokenizer.ggml.pre = "qwen2"`). Layout: ids 0..255 are the 256 bytes (as GPT-2's
 * bytes-to-unicode characters, id = byte value), then one token per merge, then the special tokens.
 *
 * Merges are generated, not trained (see buildTokenizerVocab for the order): whitespace runs, curated
 * code/English words with and without a leading space (each built left to right from its longest known
 * prefix), punctuation runs, and a breadth-first fill of English-looking letter sequences up to the
 * requested size. Each merge creates exactly one token. Whatever llama.cpp's BPE produces from them
 * round-trips to the exact input bytes; common words become single tokens (about 2.5 characters per
 * token on code and prose, against ~3.5 for a trained Qwen2.5 vocabulary).
 */
import { type GgufValue, gguf } from "./gguf-writer.js";

/** GGUF `tokenizer.ggml.token_type` values (llama.cpp's `llama_token_type`). */
export const TokenType = { normal: 1, unknown: 2, control: 3, userDefined: 4, unused: 5, byte: 6 } as const;

/** Special tokens, appended after the merges, in this order. */
export const SPECIAL_TOKENS = [
  { text: "<|endoftext|>", type: TokenType.control },
  { text: "<|im_start|>", type: TokenType.control },
  { text: "<|im_end|>", type: TokenType.control },
  // Like Qwen2.5's GGUFs: user-defined, so they are matched as single tokens even without special-token
  // parsing and are rendered when detokenizing.
  { text: "<tool_call>", type: TokenType.userDefined },
  { text: "</tool_call>", type: TokenType.userDefined },
] as const;

export type SpecialTokenText = (typeof SPECIAL_TOKENS)[number]["text"];

export const MIN_VOCAB_SIZE = 256 + SPECIAL_TOKENS.length;

export interface TokenizerVocab {
  tokens: string[];
  tokenTypes: Int32Array;
  merges: string[];
  specialIds: Record<SpecialTokenText, number>;
  bosId: number;
  eosId: number;
  eotId: number;
  padId: number;
}

/** GPT-2's bytes_to_unicode(): printable Latin-1 bytes map to themselves, the rest to U+0100 onwards. */
export const BYTE_TO_CHAR: readonly string[] = (() => {
  const chars = new Array<string>(256);
  const printable = (b: number) =>
    (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  let next = 256;
  for (let b = 0; b < 256; b++) chars[b] = String.fromCodePoint(printable(b) ? b : next++);
  return chars;
})();

/** Maps text to GPT-2 byte-level characters, one per UTF-8 byte. */
export function toByteLevel(text: string): string[] {
  const bytes = Buffer.from(text, "utf8");
  const out = new Array<string>(bytes.length);
  for (let i = 0; i < bytes.length; i++) out[i] = BYTE_TO_CHAR[bytes[i]!]!;
  return out;
}

const CODE_WORDS = `function const return if else for while import export from class new this true false null
  undefined async await type interface string number boolean void let var public private static def self None
  True False print elif lambda yield try catch except finally throw raise in of is not and or with as switch case
  break continue default struct impl fn pub mut use mod match enum package func int float double char include
  define require module exports console log length push map filter reduce value key name data result error err
  index item items list get set add id args options config path file test expect describe it should assert equal
  object array Promise resolve reject then json JSON parse stringify Math Object Array String Number Error Map Set
  Date document window React props state render component div span className style src http https www com html css
  user message content role system assistant tool call response request server client model token text input
  output context buffer size count start end begin line lines word words args kwargs init main app router handler
  event events listener callback params param query body header headers status code type types schema field fields
  readonly extends implements override abstract protected super typeof instanceof keyof delete yield void assert
  todo fix bug feat src lib dist node npm run build dev prod env process stdout stderr stdin write read open close
  stream chunk chunks bytes byte offset limit page pages total max min sum avg first last next prev step steps`;

const ENGLISH_WORDS = `the of and to a in is that for it as was with be by on not he I this are or his from at which
  but have an had they you were their one all we can her has there been if more when will would who so no she
  other its may these about into some could them only time than what first also new two like then out do any my
  our your how use used using make each such many most over should very just where after because before between
  both does even here know people same see those through under want way well work year years example following
  please help thank thanks question answer need here's let's don't can't it's I'm you're that's there's get got
  good great sure okay yes file files function functions variable variables method methods class classes object
  objects string strings number numbers value values returns call calls called write writes written read reads
  change changes changed update updates updated create creates created remove removes removed check checks
  checked problem problems issue issues solution approach implement implementation look looks looking find found`;

const PUNCTUATION = [
  "()",
  "();",
  "{}",
  "[]",
  "=>",
  " =>",
  "===",
  " ===",
  "!==",
  " !==",
  "==",
  " ==",
  " =",
  " +",
  " -",
  " *",
  " /",
  " <",
  " >",
  " <=",
  " >=",
  " &&",
  " ||",
  "//",
  " //",
  "/*",
  " */",
  "**",
  "::",
  "->",
  " ->",
  "...",
  '",',
  '":',
  '"',
  " '",
  "',",
  "');",
  '");',
  ");\n",
  " {\n",
  "}\n",
  "},\n",
  "];\n",
  ";\n",
  ",\n",
  ":\n",
  "${",
  "`;\n",
  " #",
  "##",
  "###",
  " (",
  " [",
  " {",
  " }",
  " \\",
  "\\n",
  "\n\n",
  "\n\n\n",
  "\t",
  "\t\t",
  "\t\t\t",
  " \n",
  "\r\n",
  ".\n",
  ".\n\n",
  ". ",
  ", ",
];

function words(list: string): string[] {
  return list.split(/\s+/).filter((w) => w.length > 0);
}

function capitalize(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1);
}

const SPACE = BYTE_TO_CHAR[0x20]!;
const FILL_LETTERS = "etaoinshrdlcumwfgypbvkjxqz";
const VOWELS = "aeiouy";
const VOWEL_PAIRS = new Set(
  "ai au ay ea ee ei eo eu ey ia ie io iu oa oe oi oo ou oy ua ue ui uo ya ye yo".split(" "),
);
const CONSONANT_PAIRS = new Set(
  `bl br ch ck cl cr ct dr ds fl fr ft gh gl gn gr kn ld lf lk ll lm ls lt mb mm mp ms nc nd ng nk nn ns nt
  ph pl pp pr ps pt rb rc rd rf rg rk rl rm rn rp rr rs rt rv sc sh sk sl sm sn sp ss st sw th tr ts tt tw wh
  wn wr ws xp xt`.split(/\s+/),
);

/** Whether letter `b` may follow letter `a` in a fill token: consonant/vowel alternation or a common pair. */
function plausibleBigram(a: string, b: string): boolean {
  const av = VOWELS.includes(a);
  if (av !== VOWELS.includes(b)) return true;
  return av ? VOWEL_PAIRS.has(a + b) : CONSONANT_PAIRS.has(a + b);
}

class MergeBuilder {
  readonly tokens: string[] = [...BYTE_TO_CHAR];
  readonly merges: string[] = [];
  private readonly known = new Set<string>(BYTE_TO_CHAR);

  constructor(readonly capacity: number) {}

  get full(): boolean {
    return this.merges.length >= this.capacity;
  }

  has(token: string): boolean {
    return this.known.has(token);
  }

  /** Adds the merge `left right` producing a new token; false when full or already known. */
  merge(left: string, right: string): boolean {
    const token = left + right;
    if (this.full || this.known.has(token)) return false;
    this.known.add(token);
    this.tokens.push(token);
    this.merges.push(`${left} ${right}`);
    return true;
  }

  /** Extends `stems` breadth-first, one plausible letter at a time, until `limit` merges exist. */
  fill(stems: readonly string[], limit: number): void {
    const queue = [...stems];
    for (let head = 0; head < queue.length && this.merges.length < limit; head++) {
      const stem = queue[head]!;
      if (!this.known.has(stem)) continue;
      const last = stem.charAt(stem.length - 1).toLowerCase();
      for (let i = 0; i < FILL_LETTERS.length && this.merges.length < limit; i++) {
        const c = FILL_LETTERS[i]!;
        if (!plausibleBigram(last, c)) continue;
        this.merge(stem, c);
        queue.push(stem + c);
      }
    }
  }

  /** Builds `chars` left to right from its longest known prefix. */
  chain(chars: readonly string[]): void {
    let prefix = chars[0] ?? "";
    let i = 1;
    while (i < chars.length && this.known.has(prefix + chars[i]!)) prefix += chars[i++]!;
    for (; i < chars.length && !this.full; i++) {
      const c = chars[i]!;
      this.merge(prefix, c);
      prefix += c;
    }
  }
}

/**
 * Builds a vocabulary of exactly `vocabSize` tokens (256 bytes + merges + the special tokens).
 * Deterministic; ~0.1 s for 151,936 tokens.
 */
export function buildTokenizerVocab(vocabSize: number): TokenizerVocab {
  if (!Number.isInteger(vocabSize) || vocabSize < MIN_VOCAB_SIZE) {
    throw new RangeError(`vocab size must be an integer >= ${MIN_VOCAB_SIZE}, got ${vocabSize}`);
  }
  const b = new MergeBuilder(vocabSize - MIN_VOCAB_SIZE);

  // Ranks matter: BPE applies the lowest-ranked merge first, so a bare merge like "r o" ranked before
  // the "Ġb r" + "Ġbr o" chain would split " brown" into "Ġb" "ro" "wn". Hence everything that starts
  // with a space (where most words in text are) is ranked before bare letter merges:
  // whitespace runs (indentation), "Ġ" + letter, curated " word"s, then a breadth-first fill of
  // English-looking " xyz" sequences; then curated bare words, punctuation, and a bare fill.
  for (let n = 2; n <= 16 && !b.full; n++) b.chain(toByteLevel(" ".repeat(n)));
  const letters = [...FILL_LETTERS, ...FILL_LETTERS.toUpperCase()];
  for (const l of letters) b.merge(SPACE, l);
  const curated = [...words(CODE_WORDS), ...words(ENGLISH_WORDS)].flatMap((w) => [w, capitalize(w)]);
  for (const w of curated) b.chain(toByteLevel(` ${w}`));
  const reserve = [...curated, ...PUNCTUATION].reduce((n, w) => n + Buffer.byteLength(w), 0);
  b.fill(
    letters.map((l) => SPACE + l),
    b.merges.length + Math.max(0, Math.floor((b.capacity - b.merges.length - reserve) * 0.75)),
  );
  for (const w of curated) if (w.length >= 2) b.chain(toByteLevel(w));
  for (const p of PUNCTUATION) b.chain(toByteLevel(p));
  b.fill(letters, b.capacity);
  if (!b.full) throw new RangeError(`could not generate ${vocabSize} tokens`);

  const tokens = b.tokens;
  const tokenTypes = new Int32Array(vocabSize).fill(TokenType.normal);
  const specialIds = {} as Record<SpecialTokenText, number>;
  for (const s of SPECIAL_TOKENS) {
    specialIds[s.text] = tokens.length;
    tokenTypes[tokens.length] = s.type;
    tokens.push(s.text);
  }
  const endOfText = specialIds["<|endoftext|>"];
  return {
    tokens,
    tokenTypes,
    merges: b.merges,
    specialIds,
    bosId: endOfText,
    eosId: endOfText,
    eotId: endOfText,
    padId: endOfText,
  };
}

/** The `tokenizer.ggml.*` KV metadata for `vocab`. */
export function tokenizerMetadata(vocab: TokenizerVocab): Array<[string, GgufValue]> {
  return [
    ["tokenizer.ggml.model", gguf.str("gpt2")],
    ["tokenizer.ggml.pre", gguf.str("qwen2")],
    ["tokenizer.ggml.tokens", gguf.strings(vocab.tokens)],
    ["tokenizer.ggml.token_type", gguf.i32s(vocab.tokenTypes)],
    ["tokenizer.ggml.merges", gguf.strings(vocab.merges)],
    ["tokenizer.ggml.bos_token_id", gguf.u32(vocab.bosId)],
    ["tokenizer.ggml.eos_token_id", gguf.u32(vocab.eosId)],
    ["tokenizer.ggml.eot_token_id", gguf.u32(vocab.eotId)],
    ["tokenizer.ggml.padding_token_id", gguf.u32(vocab.padId)],
    ["tokenizer.ggml.add_bos_token", gguf.bool(false)],
  ];
}
