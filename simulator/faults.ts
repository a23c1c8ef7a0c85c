/**
 * Scenario faults: the next matching requests get a canned failure instead of
 * the real handler (an error status, a dropped connection, no answer, a bad body).
 *
 * @module
 */

import { errorResponse } from "./http.ts";
import type { EchoForm, SimFault } from "./types.ts";

/** A queue of faults; each fires for its `times` matching requests, first added first. */
export class FaultQueue {
  readonly #faults: {
    fault: SimFault;
    left: number;
    skip: number;
    re: RegExp;
  }[] = [];

  /** Adds a fault. */
  add(fault: SimFault): void {
    // Drop g/y flags: a stateful regex would match only every other request.
    const re = typeof fault.pathRegex === "string"
      ? new RegExp(fault.pathRegex)
      : new RegExp(
        fault.pathRegex.source,
        fault.pathRegex.flags.replace(/[gy]/g, ""),
      );
    this.#faults.push({
      fault,
      left: fault.times ?? 1,
      skip: fault.skip ?? 0,
      re,
    });
  }

  /** Takes the fault for this request, if one matches (counting it down). */
  take(method: string, path: string): SimFault | undefined {
    const at = this.#faults.findIndex(({ fault, re }) =>
      (fault.method === undefined || fault.method.toUpperCase() === method) &&
      re.test(path)
    );
    if (at < 0) return undefined;
    const entry = this.#faults[at];
    if (entry.skip > 0) {
      entry.skip--;
      return undefined;
    }
    entry.left--;
    if (entry.left <= 0) this.#faults.splice(at, 1);
    return entry.fault;
  }
}

/**
 * What an echo of the `Authorization` header (`PVEAPIToken=<id>=<secret>`) says, in `form`.
 * A guess at what a misbehaving proxy does; PVE itself never echoes the header.
 */
export function echoed(form: EchoForm, authorization: string): string {
  const value = authorization.replace(/^PVEAPIToken=/, "");
  const cut = value.lastIndexOf("=");
  const secret = cut < 0 ? value : value.slice(cut + 1);
  const base64 = (text: string) =>
    btoa(String.fromCharCode(...new TextEncoder().encode(text)));
  switch (form) {
    case "header":
      return authorization;
    case "secret":
      return secret;
    case "percent":
      return encodeURIComponent(authorization);
    case "base64":
      return base64(authorization);
    case "base64-secret":
      return base64(secret);
    case "base64-pair":
      return base64(value);
  }
}

/** The answer of an echo fault served instead of the handler (`401` or `page`). */
export function echoResponse(
  fault: Extract<SimFault, { kind: "echo" }>,
  authorization: string,
): Response {
  const text = echoed(fault.form, authorization);
  if (fault.into === "401") {
    return errorResponse(
      401,
      `authentication failure (got Authorization: ${text})`,
    );
  }
  return new Response(
    `<html><body><h1>Sign in</h1><p>Your request carried Authorization: ${text}</p></body></html>`,
    { status: 200, headers: { "content-type": "text/html" } },
  );
}

/** The real answer with one more list entry quoting the echo (a task log line). */
export async function withEchoedLine(
  res: Response,
  authorization: string,
  form: EchoForm,
): Promise<Response> {
  const body = await res.json().catch(() => undefined);
  if (!body || !Array.isArray(body.data)) {
    return Response.json(body ?? null, { status: res.status });
  }
  const text = echoed(form, authorization);
  body.data.push({
    n: body.data.length + 1,
    t: `proxy: Authorization ${text}`,
  });
  return Response.json(body, { status: res.status });
}
