import { type Llama, LlamaGrammar, LlamaGrammarEvaluationState, type LlamaModel } from "node-llama-cpp";

/** Grammars kept parsed: the same tools come with every request of a client. */
const KEPT = 32;

/** Parsed call grammars by their text, the least recently added dropped first. */
export class GrammarCache {
  private readonly grammars = new Map<string, LlamaGrammar>();

  constructor(
    private readonly llama: Llama,
    private readonly model: LlamaModel,
  ) {}

  /** A fresh evaluation state of the grammar `text` (parsed once per text). */
  state(text: string): LlamaGrammarEvaluationState {
    let grammar = this.grammars.get(text);
    if (!grammar) {
      grammar = new LlamaGrammar(this.llama, { grammar: text });
      if (this.grammars.size >= KEPT) this.grammars.delete(this.grammars.keys().next().value!);
      this.grammars.set(text, grammar);
    }
    return new LlamaGrammarEvaluationState({ model: this.model, grammar });
  }
}
