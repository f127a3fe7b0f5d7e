import { createHash } from "node:crypto";
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  getLlama,
  JinjaTemplateChatWrapper,
  type Llama,
  LlamaChatSession,
  LlamaLogLevel,
  type LlamaModel,
  LlamaText,
  readGgufFileInfo,
  resolveChatWrapper,
  type Token,
} from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GgmlType } from "./gguf-writer.js";
import { convertToF16, fp32ToFp16Bits, quantizeQ4_0, quantizeQ8_0 } from "./quantize.js";
import {
  ensureSyntheticModel,
  SYNTHETIC_SHAPES,
  type SyntheticQuant,
  syntheticTensorPlan,
  writeSyntheticModel,
} from "./synthetic-model.js";
import { buildTokenizerVocab, SPECIAL_TOKENS } from "./tokenizer-vocab.js";

let dir: string;
let llama: Llama;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "spark-synthetic-"));
  llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
});

afterAll(async () => {
  await llama?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const block = (f: (j: number) => number) => Float32Array.from({ length: 32 }, (_, j) => f(j));
const u16 = (bytes: Uint8Array, at = 0) => bytes[at]! | (bytes[at + 1]! << 8);

describe("quantizers (ggml reference)", () => {
  it("converts to half precision with round-to-nearest-even", () => {
    expect(fp32ToFp16Bits(1)).toBe(0x3c00);
    expect(fp32ToFp16Bits(-2)).toBe(0xc000);
    expect(fp32ToFp16Bits(0.5)).toBe(0x3800);
    expect(fp32ToFp16Bits(0.1)).toBe(0x2e66);
    expect(fp32ToFp16Bits(1 / 3)).toBe(0x3555);
    expect(fp32ToFp16Bits(65504)).toBe(0x7bff);
    expect(fp32ToFp16Bits(65520)).toBe(0x7c00); // halfway to the next binade: ties to even = inf
    expect(fp32ToFp16Bits(2 ** -24)).toBe(0x0001); // smallest subnormal
    expect(fp32ToFp16Bits(2 ** -26)).toBe(0x0000);
    expect(fp32ToFp16Bits(1 + 2 ** -11)).toBe(0x3c00); // tie -> even mantissa
    expect(fp32ToFp16Bits(1 + 3 * 2 ** -11)).toBe(0x3c02);
    const values = block((j) => (j - 16) * 0.37 + 1e-3 * j * j);
    const bytes = new Uint8Array(64);
    expect(convertToF16(values, bytes)).toBe(64);
    for (let j = 0; j < 32; j++) expect(u16(bytes, 2 * j)).toBe(fp32ToFp16Bits(values[j]!));
  });

  it("Q8_0: d = max|x|/127, q = roundf(x/d)", () => {
    // x = (j - 16) / 4: amax 4, d = 4/127 -> f16 0x2808 (2^-5 * (1 + 8/1024)); 1/d = 31.75 exactly,
    // so q = roundf((j - 16) * 7.9375).
    const out = new Uint8Array(34);
    expect(
      quantizeQ8_0(
        block((j) => (j - 16) / 4),
        out,
      ),
    ).toBe(34);
    expect(u16(out)).toBe(0x2808);
    const q = new Int8Array(out.buffer, 2, 32);
    expect([q[0], q[1], q[2], q[15], q[16], q[17], q[30], q[31]]).toEqual([
      -127, -119, -111, -8, 0, 8, 111, 119,
    ]);

    // amax 127 gives d = 1: exact halves round away from zero.
    const halves = [127, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 126.5, -126.5];
    quantizeQ8_0(
      block((j) => halves[j] ?? 0),
      out,
    );
    expect(u16(out)).toBe(0x3c00);
    expect([...q.slice(0, 9)]).toEqual([127, 1, -1, 2, -2, 3, -3, 127, -127]);

    quantizeQ8_0(new Float32Array(32), out);
    expect([...out]).toEqual(new Array(34).fill(0));
  });

  it("Q4_0: d = max/-8 (signed), q = min(15, trunc(x/d + 8.5)), element j | element j+16 << 4", () => {
    // x = (j - 16) / 4: the largest magnitude is x[0] = -4, so d = 0.5 (f16 0x3800), 1/d = 2 and
    // q[j] = min(15, trunc(j/2 + 0.5)).
    const out = new Uint8Array(18);
    expect(
      quantizeQ4_0(
        block((j) => (j - 16) / 4),
        out,
      ),
    ).toBe(18);
    expect(u16(out)).toBe(0x3800);
    expect([...out.subarray(2)]).toEqual([
      0x80, 0x91, 0x91, 0xa2, 0xa2, 0xb3, 0xb3, 0xc4, 0xc4, 0xd5, 0xd5, 0xe6, 0xe6, 0xf7, 0xf7, 0xf8,
    ]);

    // A positive maximum gives a negative scale: x[0] = 8 -> d = -1 (0xbc00), q[0] = 0, zeros -> 8.
    quantizeQ4_0(
      block((j) => (j === 0 ? 8 : 0)),
      out,
    );
    expect(u16(out)).toBe(0xbc00);
    expect([...out.subarray(2)]).toEqual([0x80, ...new Array(15).fill(0x88)]);

    // Ties on magnitude keep the first element: -2 before 2 -> d = 0.25, 2 maps to 0.
    quantizeQ4_0(
      block((j) => (j === 3 ? -2 : j === 20 ? 2 : 0)),
      out,
    );
    expect(u16(out)).toBe(0x3400);
    expect(out[2 + 3]).toBe(0x80);
    expect(out[2 + 4]).toBe(0xf8); // 8 | 15 << 4
  });
});

describe("tokenizer vocabulary", () => {
  it("builds large vocabularies with unique tokens and valid merges", () => {
    for (const size of [SYNTHETIC_SHAPES.tiny.vocab, 49152, 151936]) {
      const vocab = buildTokenizerVocab(size);
      expect(vocab.tokens).toHaveLength(size);
      expect(vocab.tokenTypes).toHaveLength(size);
      expect(new Set(vocab.tokens).size).toBe(size);
      expect(vocab.merges).toHaveLength(size - 256 - SPECIAL_TOKENS.length);
      // Merge i is "left right" (no other space: U+0020 is "Ġ" at byte level) and creates token 256 + i.
      const bad = vocab.merges.filter((merge, i) => {
        const parts = merge.split(" ");
        return parts.length !== 2 || vocab.tokens[256 + i] !== parts.join("");
      });
      expect(bad).toEqual([]);
      expect(vocab.tokens.slice(-SPECIAL_TOKENS.length)).toEqual(SPECIAL_TOKENS.map((s) => s.text));
      expect(vocab.eosId).toBe(vocab.specialIds["<|endoftext|>"]);
    }
  });
});

describe("GGUF file layout", () => {
  it("writes the header, metadata and tensor infos llama.cpp expects", async () => {
    const shape = { ...SYNTHETIC_SHAPES["smollm2-135m"], layers: 2 };
    const path = join(dir, "smollm2-2-layers.gguf");
    await writeSyntheticModel(path, { shape, quant: "Q8_0", name: "header check" });
    const info = await readGgufFileInfo(path, { logWarnings: false });
    expect(info.version).toBe(3);
    expect(Number(info.tensorCount)).toBe(2 * 9 + 2);
    const md = info.metadata as unknown as Record<string, Record<string, unknown>>;
    expect(md.general).toMatchObject({ architecture: "llama", name: "header check", file_type: 7 });
    expect(md.llama).toMatchObject({
      context_length: 8192,
      embedding_length: 576,
      block_count: 2,
      feed_forward_length: 1536,
      vocab_size: 49152,
      attention: { head_count: 9, head_count_kv: 3, layer_norm_rms_epsilon: expect.closeTo(1e-5, 10) },
      rope: { dimension_count: 64, freq_base: 100000 },
    });
    const tok = md.tokenizer as { ggml: Record<string, unknown>; chat_template: string };
    expect(tok.ggml).toMatchObject({
      model: "gpt2",
      pre: "qwen2",
      add_bos_token: false,
      eos_token_id: 49147,
    });
    expect(tok.ggml.tokens).toHaveLength(49152);
    expect(tok.chat_template).toContain('<tool_call>\\n{\\"name\\": <function-name>');

    const tensors = info.tensorInfo!;
    const byName = new Map(tensors.map((t) => [t.name, t]));
    expect(byName.get("token_embd.weight")?.dimensions.map(Number)).toEqual([576, 49152]);
    expect(byName.get("blk.1.attn_k.weight")?.dimensions.map(Number)).toEqual([576, 192]);
    expect(byName.get("blk.1.ffn_down.weight")?.dimensions.map(Number)).toEqual([1536, 576]);
    expect(byName.get("blk.0.attn_norm.weight")?.ggmlType).toBe(GgmlType.F32);
    expect(byName.get("blk.0.ffn_up.weight")?.ggmlType).toBe(GgmlType.Q8_0);
    expect(byName.has("output.weight")).toBe(false); // tied
    let expectedOffset = 0;
    for (const t of tensors) {
      expect(Number(t.offset)).toBe(expectedOffset);
      const elements = t.dimensions.reduce<number>((a, n) => a * Number(n), 1);
      const bytes = t.ggmlType === GgmlType.F32 ? elements * 4 : (elements / 32) * 34;
      expectedOffset += Math.ceil(bytes / 32) * 32;
    }
    expect(info.infoEndOffset! % 32).toBe(0);
    expect((await stat(path)).size).toBe(info.infoEndOffset! + expectedOffset);
  });

  it("builds the full smollm2-135m shape with the expected tensor count and size", async () => {
    const plan = syntheticTensorPlan(SYNTHETIC_SHAPES["smollm2-135m"], "Q8_0");
    expect(plan).toHaveLength(30 * 9 + 2);
    const params = plan.reduce((sum, t) => sum + t.info.dims.reduce((a, b) => a * b, 1), 0);
    expect(params).toBe(134_515_008); // SmolLM2-135M's parameter count
    const fractions: number[] = [];
    const path = await ensureSyntheticModel(dir, "smollm2-135m", "Q8_0", {
      onProgress: (f) => fractions.push(f),
    });
    expect(fractions.at(-1)).toBe(1);
    const info = await readGgufFileInfo(path, { logWarnings: false, ignoreKeys: ["tokenizer.ggml.merges"] });
    expect(Number(info.tensorCount)).toBe(272);
    const { size } = await stat(path);
    expect(size).toBeGreaterThan(143_000_000);
    expect(size).toBeLessThan(146_000_000);
    await rm(path);
  });

  it("is deterministic per seed and reuses complete files", async () => {
    const hash = async (p: string) =>
      createHash("sha256")
        .update(await readFile(p))
        .digest("hex");
    const a = join(dir, "a.gguf");
    const b = join(dir, "b.gguf");
    await writeSyntheticModel(a, { shape: SYNTHETIC_SHAPES.tiny, quant: "Q4_0", seed: 7 });
    await writeSyntheticModel(b, { shape: SYNTHETIC_SHAPES.tiny, quant: "Q4_0", seed: 7 });
    expect(await hash(a)).toBe(await hash(b));
    await writeSyntheticModel(b, { shape: SYNTHETIC_SHAPES.tiny, quant: "Q4_0", seed: 8 });
    expect(await hash(a)).not.toBe(await hash(b));

    const cache = join(dir, "cache");
    const [p1, p2] = await Promise.all([
      ensureSyntheticModel(cache, "tiny", "Q8_0", { seed: 3 }),
      ensureSyntheticModel(cache, "tiny", "Q8_0", { seed: 3 }),
    ]);
    expect(p1).toBe(p2);
    const before = await stat(p1);
    expect(await ensureSyntheticModel(cache, "tiny", "Q8_0", { seed: 3 })).toBe(p1);
    expect((await stat(p1)).mtimeMs).toBe(before.mtimeMs);
    expect(await readdir(cache)).toEqual(["spark-synthetic-tiny-q8_0-seed3-v4.gguf"]);
  });
});

const ROUND_TRIP_TEXTS = [
  "function add(a, b) {\n    return a + b; // sum\n}\n",
  "naïve café — 日本語のテキスト 😀👍🏽 Ω≈ç√ Привет",
  "  leading spaces\n\n\ttabs\r\nwindows line\n   trailing   ",
  'literal <|im_start|>user and <tool_call>{"x": 1}</tool_call> and <|endoftext|>',
  `const x = \`\${a}\` ?? [1, 2, 3].map((n) => n ** 2); // don't, it's 42%`,
];

function randomText(seed: number, length: number): string {
  let s = seed;
  const next = () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s / 2 ** 32;
  };
  const ranges = [
    [0x20, 0x7e],
    [0x09, 0x0d],
    [0xa0, 0x24f],
    [0x3040, 0x30ff],
    [0x4e00, 0x4fff],
    [0x1f300, 0x1f64f],
  ] as const;
  let out = "";
  for (let i = 0; i < length; i++) {
    const [lo, hi] = ranges[Math.floor(next() * ranges.length)]!;
    out += String.fromCodePoint(lo + Math.floor(next() * (hi - lo + 1)));
  }
  return out;
}

describe.each<SyntheticQuant>(["F16", "Q8_0", "Q4_0"])("tiny %s model on llama.cpp", (quant) => {
  let model: LlamaModel;

  beforeAll(async () => {
    const modelPath = join(dir, `tiny-${quant}.gguf`);
    await writeSyntheticModel(modelPath, { shape: SYNTHETIC_SHAPES.tiny, quant });
    model = await llama.loadModel({ modelPath });
  });

  afterAll(async () => {
    await model?.dispose();
  });

  it("round-trips arbitrary text through tokenize/detokenize", () => {
    const texts = [...ROUND_TRIP_TEXTS, ...Array.from({ length: 10 }, (_, i) => randomText(i + 1, 200))];
    for (const text of texts) {
      const tokens = model.tokenize(text);
      expect(tokens.length).toBeGreaterThan(0);
      expect(model.detokenize(tokens)).toBe(text);
    }
  });

  it("parses the special tokens as single tokens", () => {
    const vocab = buildTokenizerVocab(SYNTHETIC_SHAPES.tiny.vocab);
    const id = (text: keyof typeof vocab.specialIds) => vocab.specialIds[text] as Token;
    const imStart = id("<|im_start|>");
    expect(model.tokenize("<|im_start|>", true)).toEqual([imStart]);
    expect(model.tokenize("<|im_start|>", false).length).toBeGreaterThan(1);
    expect(model.tokenize("<|im_end|>", true)).toEqual([id("<|im_end|>")]);
    // user-defined, like Qwen2.5: a single token even without special-token parsing
    expect(model.tokenize("<tool_call>", false)).toEqual([id("<tool_call>")]);
    expect(model.tokenize("</tool_call>", true)).toEqual([id("</tool_call>")]);
    expect(model.isEogToken(imStart)).toBe(false);
    expect(model.isEogToken(id("<|im_end|>"))).toBe(true);
    expect(model.isEogToken(id("<|endoftext|>"))).toBe(true);
    expect(model.tokens.eos).toBe(id("<|endoftext|>"));
  });

  it("generates varied tokens greedily and deterministically", async () => {
    const context = await model.createContext({ contextSize: 512, threads: 2 });
    try {
      const prompt = model.tokenize(
        "<|im_start|>user\nWrite a function<|im_end|>\n<|im_start|>assistant\n",
        true,
      );
      const run = async () => {
        const sequence = context.getSequence();
        const out: Token[] = [];
        for await (const token of sequence.evaluate(prompt, { temperature: 0 })) {
          out.push(token);
          if (out.length >= 20) break;
        }
        sequence.dispose();
        return out;
      };
      const first = await run();
      expect(first).toHaveLength(20);
      expect(new Set(first).size).toBeGreaterThan(5);
      expect(await run()).toEqual(first);
    } finally {
      await context.dispose();
    }
  });

  it.runIf(quant === "Q8_0")(
    "never opens a message or a call by itself (only the end tokens are left to chance)",
    async () => {
      const vocab = buildTokenizerVocab(SYNTHETIC_SHAPES.tiny.vocab);
      const opening = new Set<number>([
        vocab.specialIds["<|im_start|>"],
        vocab.specialIds["<tool_call>"],
        vocab.specialIds["</tool_call>"],
      ]);
      const context = await model.createContext({ contextSize: 2048, threads: 2 });
      try {
        const seen: Token[] = [];
        // Several prompts, each decoded until the model ends its turn or 150 tokens.
        for (const task of ["Hi", "Write a function", "List the files", "Fix the bug in main.ts"]) {
          const sequence = context.getSequence();
          const prompt = model.tokenize(`<|im_start|>user\n${task}<|im_end|>\n<|im_start|>assistant\n`, true);
          let count = 0;
          for await (const token of sequence.evaluate(prompt, { temperature: 0 })) {
            if (model.isEogToken(token) || ++count >= 150) break;
            seen.push(token);
          }
          sequence.dispose();
        }
        expect(seen.length).toBeGreaterThan(100);
        expect(seen.filter((token) => opening.has(token))).toEqual([]);
      } finally {
        await context.dispose();
      }
    },
    120_000,
  );

  it("resolves a chat wrapper with Qwen-style function calling", () => {
    const wrapper = resolveChatWrapper(model);
    expect(wrapper).toBeInstanceOf(JinjaTemplateChatWrapper);
    expect((wrapper as JinjaTemplateChatWrapper).usingJinjaFunctionCallTemplate).toBe(true);
    expect(LlamaText(wrapper.settings.functions.call.prefix).toString()).toBe('<tool_call>\n{"name": "');
    expect(LlamaText(wrapper.settings.functions.result.prefix).toString()).toContain("<tool_response>");
    const call = wrapper.generateFunctionCall("get_weather", { city: "Paris" });
    expect(call.toString()).toBe(
      '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
    );
  });

  it.runIf(quant === "Q8_0")("runs a chat session with functions end to end", async () => {
    // The byte-heavy tiny vocabulary needs ~1k tokens for Qwen's tool system prompt.
    const context = await model.createContext({ contextSize: 2048, threads: 2 });
    try {
      const session = new LlamaChatSession({ contextSequence: context.getSequence() });
      const functions = {
        get_weather: { description: "Weather for a city", handler: () => "sunny" },
      };
      const answer = await session.prompt("Hi", { functions, maxTokens: 8, temperature: 0 });
      expect(typeof answer).toBe("string");
    } finally {
      await context.dispose();
    }
  });
});
