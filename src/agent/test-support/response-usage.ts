import type { ResponsesClient } from "../../client/responses-client.js";

export interface ResponseUsage {
  /** The turn the response belongs to, as `turn()` said when it was created. */
  turn: number;
  input: number;
  cached: number;
  output: number;
}

/**
 * Records the usage of each response `client` creates from now on, with its turn: a turn in which
 * the model calls a tool makes several responses, so a turn's totals cannot say what was reused.
 */
export function recordResponseUsage(client: ResponsesClient, turn: () => number): ResponseUsage[] {
  const responses: ResponseUsage[] = [];
  const create = client.create.bind(client);
  client.create = (body, options) => {
    const stream = create(body, options);
    const of = turn();
    void stream.final.then(
      ({ usage }) => {
        if (usage)
          responses.push({
            turn: of,
            input: usage.input_tokens,
            cached: usage.input_tokens_details.cached_tokens,
            output: usage.output_tokens,
          });
      },
      () => {},
    );
    return stream;
  };
  return responses;
}
