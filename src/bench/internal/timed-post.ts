import http from "node:http";
import https from "node:https";

export interface TimedPostOptions {
  /** The connection pool, or false for a new connection closed after the response. */
  agent: http.Agent | false;
  /** HTTPS only: accept a self-signed certificate. Default: true. */
  rejectUnauthorized?: boolean;
}

/**
 * POSTs a JSON body and reads the whole response; resolves with the milliseconds from the call to
 * the response's last byte. Throws on a status other than 200.
 */
export function timedPost(url: string, body: string, options: TimedPostOptions): Promise<number> {
  const target = new URL(url);
  const started = performance.now();
  const send = target.protocol === "https:" ? https.request : http.request;
  return new Promise((resolve, reject) => {
    const req = send(
      target,
      {
        method: "POST",
        agent: options.agent,
        rejectUnauthorized: options.rejectUnauthorized ?? true,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("error", reject);
        res.on("end", () => {
          if (res.statusCode === 200) resolve(performance.now() - started);
          else reject(new Error(`bench: ${url} answered ${res.statusCode}: ${Buffer.concat(chunks)}`));
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}
