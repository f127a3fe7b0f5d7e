import { type LlamaContextSequence, type Token, TokenPredictor } from "node-llama-cpp";
import { describe, expect, test } from "vitest";
import { SwitchingPredictor } from "./switching-predictor.js";

/** Records what it is told and drafts the next `length` tokens after its state (state + 100...). */
class Recorder extends TokenPredictor {
  state: Token[] = [];
  calls: string[] = [];
  disposed = false;
  constructor(private readonly asyncReset = false) {
    super();
  }
  override reset({ stateTokens }: { stateTokens: Token[] }): Promise<void> | void {
    this.calls.push(`reset ${stateTokens.length}`);
    this.state = stateTokens.slice();
    if (this.asyncReset) return new Promise((resolve) => setTimeout(resolve, 1));
  }
  override pushTokens(tokens: Token[]): void {
    this.calls.push(`push ${tokens.join(",")}`);
    this.state.push(...tokens);
  }
  override predictTokens(): Token[] {
    this.calls.push("predict");
    return [(this.state.length + 100) as Token];
  }
  override stop(): void {
    this.calls.push("stop");
  }
  override dispose(): void {
    this.disposed = true;
  }
}

const params = (stateTokens: number[]) => ({
  targetSequence: {} as LlamaContextSequence,
  stateTokens: stateTokens as Token[],
  evaluateOptions: {},
});

describe("SwitchingPredictor", () => {
  test("forwards to the selected predictor only; none selected drafts nothing", async () => {
    const a = new Recorder();
    const b = new Recorder();
    const switching = new SwitchingPredictor([a, b]);
    expect(await switching.predictTokens()).toEqual([]);
    switching.select(a);
    await switching.reset(params([1, 2, 3]));
    switching.pushTokens([4 as Token]);
    expect(await switching.predictTokens()).toEqual([104]);
    expect(a.calls).toEqual(["reset 3", "push 4", "predict"]);
    expect(b.calls).toEqual([]);
    expect(switching.current).toBe(a);
  });

  test("switching stops the one left; the next evaluation's reset goes to the one chosen", async () => {
    const lookup = new Recorder();
    const draft = new Recorder(true);
    const switching = new SwitchingPredictor([lookup, draft]);
    switching.select(lookup);
    await switching.reset(params([1, 2, 3]));
    switching.select(draft);
    expect(lookup.calls.at(-1)).toBe("stop");
    await switching.reset(params([1, 2, 3, 4]));
    switching.pushTokens([5 as Token]);
    expect(await switching.predictTokens()).toEqual([105]);
    expect(draft.calls).toEqual(["reset 4", "push 5", "predict"]);
    expect(lookup.calls).toEqual(["reset 3", "stop"]);
  });

  test("only its own predictors can be selected; disposing disposes them all", async () => {
    const a = new Recorder();
    const b = new Recorder();
    const switching = new SwitchingPredictor([a, b]);
    expect(() => switching.select(new Recorder())).toThrow(/not one of its predictors/);
    switching.select(b);
    await switching.dispose();
    expect(a.disposed && b.disposed).toBe(true);
    expect(switching.current).toBeUndefined();
  });
});
