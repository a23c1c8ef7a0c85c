/**
 * Scenario faults: the next matching requests get a canned failure instead of
 * the real handler (an error status, a dropped connection, no answer, a bad body).
 *
 * @module
 */

import { errorResponse } from "./http.ts";
import type {
  ConfigValue,
  EchoForm,
  ParamEchoForm,
  RequestRecord,
  SimFault,
} from "./types.ts";

/** An echo fault, of the header or of a parameter. */
export type EchoFault = Extract<SimFault, { kind: "echo" }>;

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

/**
 * `<param>=<value>` as an echo spells a parameter the method sent, in `form`. Every form is a guess
 * at what a proxy, a hook script or a debug log in front of PVE might quote; no PVE source is known
 * to echo a password in any of them.
 */
export function echoedParam(
  form: ParamEchoForm,
  param: string,
  value: string,
): string {
  switch (form) {
    case "raw":
      return `${param}=${value}`;
    case "percent":
      return `${param}=${encodeURIComponent(value)}`;
    case "form":
      return new URLSearchParams([[param, value]]).toString();
    case "base64":
      return `${param}=${
        btoa(String.fromCharCode(...new TextEncoder().encode(value)))
      }`;
    // What an HTML error page shows of it (a proxy's, a hook's).
    case "html":
      return `${param}=${htmlEscaped(value)}`;
    // A command line a hook or a shell error quotes: single quotes, a quote as '\''.
    case "shell":
      return `${param}='${value.replaceAll("'", "'\\''")}'`;
    // A dumper's or a debug log's escapes: every byte outside [A-Za-z0-9] as \xHH.
    case "hex-escaped":
      return `${param}=${hexEscaped(value)}`;
  }
}

function htmlEscaped(text: string): string {
  const entities: Record<string, string> = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    '"': "&quot;",
    "'": "&#39;",
  };
  return text.replace(/[&<>"']/g, (c) => entities[c]);
}

function hexEscaped(text: string): string {
  return [...new TextEncoder().encode(text)].map((byte) => {
    const c = String.fromCharCode(byte);
    return /[A-Za-z0-9]/.test(c)
      ? c
      : `\\x${byte.toString(16).padStart(2, "0")}`;
  }).join("");
}

/**
 * The value of `param` in the latest request that carried it (this one, or the earlier request a
 * task log belongs to: PVE's workers log their own command lines), or undefined.
 */
export function sentParam(
  requests: readonly RequestRecord[],
  param: string,
): string | undefined {
  for (let i = requests.length - 1; i >= 0; i--) {
    const { form, query } = requests[i];
    const value = form.find(([key]) => key === param)?.[1] ?? query[param];
    if (value !== undefined) return value;
  }
  return undefined;
}

/**
 * What an echo fault quotes: `Authorization <header in form>`, or `<param>=<value in form>` for a
 * parameter the method sent (`<param>=<not sent>` when no request carried it).
 */
export function echoText(
  fault: EchoFault,
  authorization: string,
  requests: readonly RequestRecord[],
): string {
  if (!("param" in fault)) {
    return `Authorization: ${echoed(fault.form, authorization)}`;
  }
  const value = sentParam(requests, fault.param);
  return value === undefined
    ? `${fault.param}=<not sent>`
    : echoedParam(fault.form, fault.param, value);
}

/** The answer of an echo fault served instead of the handler (`401`, `500`, `400` or `page`). */
export function echoResponse(fault: EchoFault, text: string): Response {
  switch (fault.into) {
    case "401":
      return errorResponse(401, `authentication failure (got ${text})`);
    case "500":
      return errorResponse(
        500,
        `proxy: upstream refused the request (${text})`,
      );
    case "400":
      return errorResponse(400, "Parameter verification failed.", {
        ["param" in fault ? fault.param : "authorization"]:
          `invalid format - got ${text}`,
      });
    default:
      return new Response(
        `<html><body><h1>Sign in</h1><p>Your request carried ${text}</p></body></html>`,
        { status: 200, headers: { "content-type": "text/html" } },
      );
  }
}

/** The real answer with one more list entry quoting the echo (a task log line). */
export async function withEchoedLine(
  res: Response,
  text: string,
): Promise<Response> {
  const body = await res.json().catch(() => undefined);
  if (!body || !Array.isArray(body.data)) {
    return Response.json(body ?? null, { status: res.status });
  }
  body.data.push({ n: body.data.length + 1, t: `proxy: ${text}` });
  return Response.json(body, { status: res.status });
}

/**
 * A new guest's final config under a `stores` fault: `config` with the fault's values in place of
 * the requested ones. A guess for the matrix and the verification tests of create and clone: no
 * PVE version is known to store other values than asked (pve-container's create_vm and
 * qemu-server's clone_vm write the request's), but a hook script, a storage plugin's default or a
 * future clamp could, and only the read-back would show it.
 */
export function storedInstead(
  config: Record<string, ConfigValue>,
  stores: Record<string, ConfigValue> | undefined,
): Record<string, ConfigValue> {
  return stores ? { ...config, ...stores } : config;
}
