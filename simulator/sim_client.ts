/**
 * A deliberately plain PVE API client for the simulator's own tests: one fetch
 * per call, parameters as PVE expects them (query for GET/DELETE, form body for
 * POST/PUT, a list value as a repeated key). It proves the simulator, not a
 * production client.
 *
 * @module
 */

/** A token header value for `id` + `secret`. */
export function tokenHeader(id: string, secret: string): string {
  return `PVEAPIToken=${id}=${secret}`;
}

/** Parameters: a list value is sent as a repeated key. */
export type ApiParams = Record<string, string | number | boolean | string[]>;

/** An answer: HTTP status and parsed JSON body. */
export interface ApiAnswer {
  status: number;
  // deno-lint-ignore no-explicit-any
  body: any;
}

/** Options of one call. */
export interface ApiOptions {
  /** Authorization header value; omitted when undefined. */
  auth?: string;
  /** An HTTP client (e.g. trusting a test CA). */
  client?: Deno.HttpClient;
}

function pairs(params: ApiParams): [string, string][] {
  const out: [string, string][] = [];
  for (const [k, v] of Object.entries(params)) {
    for (const item of Array.isArray(v) ? v : [v]) {
      out.push([
        k,
        typeof item === "boolean" ? (item ? "1" : "0") : String(item),
      ]);
    }
  }
  return out;
}

/** Calls `/api2/json{path}` and returns status and JSON body (the body is always consumed). */
export async function api(
  baseUrl: string,
  method: string,
  path: string,
  params: ApiParams = {},
  opts: ApiOptions = {},
): Promise<ApiAnswer> {
  const encoded = new URLSearchParams(pairs(params)).toString();
  const inQuery = method === "GET" || method === "DELETE";
  const url = `${baseUrl}/api2/json${path}${
    inQuery && encoded ? `?${encoded}` : ""
  }`;
  const headers: Record<string, string> = {};
  if (opts.auth !== undefined) headers.authorization = opts.auth;
  if (!inQuery) headers["content-type"] = "application/x-www-form-urlencoded";
  const res = await fetch(url, {
    method,
    headers,
    body: inQuery ? undefined : encoded,
    client: opts.client,
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON (e.g. a "body" fault): keep the text
  }
  return { status: res.status, body };
}

/** Polls `fn` every `intervalMs` until it returns a value, or throws after `timeoutMs`. */
export async function until<T>(
  fn: () => Promise<T | undefined>,
  what: string,
  timeoutMs = 5000,
  intervalMs = 10,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Polls a task's status on the node in its UPID until it stopped; returns the final status data. */
export function waitTask(
  baseUrl: string,
  upid: string,
  opts: ApiOptions,
): Promise<Record<string, unknown>> {
  const node = upid.split(":")[1];
  return until(async () => {
    const r = await api(
      baseUrl,
      "GET",
      `/nodes/${node}/tasks/${encodeURIComponent(upid)}/status`,
      {},
      opts,
    );
    if (r.status === 400) return undefined; // "no such task" right after dispatch: retry
    if (r.status !== 200) {
      throw new Error(`task status ${r.status}: ${JSON.stringify(r.body)}`);
    }
    return r.body.data.status === "stopped" ? r.body.data : undefined;
  }, `task ${upid}`);
}
