import { z } from "zod";

/** What clients of the agent host send, one JSON message per WebSocket frame. */

const threadId = z.string().min(1).max(128);
const input = z
  .string()
  .min(1)
  .max(1024 * 1024);

export const HOST_REQUEST_SCHEMAS = {
  "thread.start": z.object({ type: z.literal("thread.start") }),
  "thread.resume": z.object({
    type: z.literal("thread.resume"),
    thread_id: threadId,
    /** Replay only events after this sequence number (a reconnecting client's last one). */
    after_seq: z.number().int().min(-1).optional(),
  }),
  "thread.list": z.object({ type: z.literal("thread.list") }),
  "turn.start": z.object({ type: z.literal("turn.start"), thread_id: threadId, input }),
  "turn.steer": z.object({ type: z.literal("turn.steer"), thread_id: threadId, input }),
  "turn.queue": z.object({ type: z.literal("turn.queue"), thread_id: threadId, input }),
  "turn.interrupt": z.object({ type: z.literal("turn.interrupt"), thread_id: threadId }),
  "approval.respond": z.object({
    type: z.literal("approval.respond"),
    thread_id: threadId,
    approval_id: z.string().min(1).max(128),
    approved: z.boolean(),
  }),
} as const;

export type HostRequestType = keyof typeof HOST_REQUEST_SCHEMAS;
export type HostRequest = {
  [K in HostRequestType]: z.infer<(typeof HOST_REQUEST_SCHEMAS)[K]>;
}[HostRequestType];
