/**
 * PVE's answer shapes: `{"data": …}` on success, and the error envelope.
 *
 * PVE puts an error's text in the HTTP reason phrase (and, since PVE 7, also in a
 * JSON `message`). Deno cannot set a reason phrase, so the simulator uses the
 * JSON `message` only, with PVE's trailing newline.
 *
 * @module
 */

/** PVE's JSON content type. */
export const JSON_TYPE = "application/json;charset=UTF-8";

/** An error a handler throws to answer with PVE's error shape. */
export class ApiError extends Error {
  /** HTTP status. */
  readonly status: number;
  /** Per-parameter messages (400 "Parameter verification failed."). */
  readonly errors?: Record<string, string>;

  /** @param status HTTP status; @param message text without the trailing newline */
  constructor(
    status: number,
    message: string,
    errors?: Record<string, string>,
  ) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.errors = errors;
  }
}

/** A 400 for bad parameters, as PVE's raise_param_exc gives it. */
export function paramError(errors: Record<string, string>): ApiError {
  return new ApiError(400, "Parameter verification failed.", errors);
}

/** A handler result with top-level fields besides `data` (e.g. `total` of a task log). */
export class Reply {
  /** The `data` value. */
  readonly data: unknown;
  /** Extra top-level fields. */
  readonly extra: Record<string, unknown>;

  /** @param data the `data` value; @param extra other top-level fields */
  constructor(data: unknown, extra: Record<string, unknown>) {
    this.data = data;
    this.extra = extra;
  }
}

/** Builds a success answer. */
export function dataResponse(result: unknown): Response {
  const body = result instanceof Reply
    ? { data: result.data, ...result.extra }
    : { data: result ?? null };
  return new Response(JSON.stringify(body), {
    status: 200,
    headers: { "content-type": JSON_TYPE },
  });
}

/** Builds an error answer: `{"data": null, "message": "<msg>\n", "errors"?: …}`. */
export function errorResponse(
  status: number,
  message: string,
  errors?: Record<string, string>,
): Response {
  const body: Record<string, unknown> = { data: null };
  if (errors) body.errors = errors;
  body.message = message.endsWith("\n") ? message : `${message}\n`;
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": JSON_TYPE },
  });
}
