import type { GenerateRequest } from "../../engine/engine.js";
import type { ScriptedReply } from "../../engine/scripted/scripted-engine.js";

/** A script that answers each request in turn, recording what the model was sent. */
export function recorded(replies: ScriptedReply[]) {
  const requests: GenerateRequest[] = [];
  let turn = 0;
  return {
    requests,
    script: (request: GenerateRequest) => {
      requests.push(request);
      return replies[turn++] ?? { text: "Done." };
    },
  };
}

/** A reply that calls one tool with `args`. */
export const call = (name: string, args: object): ScriptedReply => ({
  toolCalls: [{ name, arguments: JSON.stringify(args) }],
});
