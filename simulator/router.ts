/**
 * Finds the route for a request and runs it in PVE's order: route lookup (501),
 * permission (403), node (500, the proxy step), parameters (400), then the
 * handler (whose own failures are mostly 500).
 *
 * @module
 */

import {
  type AuthUser,
  checkVmPerm,
  type Route,
  type SimCore,
} from "./context.ts";
import { ApiError, dataResponse, errorResponse, Reply } from "./http.ts";
import { checkAnswer, checkParameters } from "./schema/check.ts";
import type { ConformanceEntry } from "./schema/conformance.ts";
import { endpointFacts, returnsOf } from "./schema/facts.ts";
import {
  checkParams,
  NODE_SPEC,
  type ParamSpec,
  type RawParams,
  VMID_SPEC,
} from "./params.ts";
import { SNAPNAME_SPEC } from "./routes_snapshot.ts";

const PATH_PARAM_SPECS: Record<string, ParamSpec> = {
  node: NODE_SPEC,
  vmid: VMID_SPEC,
  upid: { type: "string" },
  snapname: SNAPNAME_SPEC,
  // A volume id (`local:backup/vzdump-…`): it may hold `/` (see #match).
  volume: { type: "string" },
  // pve-storage-id
  storage: { type: "string", pattern: /^[a-z][a-z0-9\-_.]*[a-z0-9]$/i },
  // The firewall's rule position, IP set or alias name and IP set entry: the schema checks them.
  pos: { type: "integer", minimum: 0 },
  name: { type: "string" },
  cidr: { type: "string" },
  // An HA resource id (`vm:100`, `ct:100` or a VMID): the schema checks it.
  sid: { type: "string" },
  rule: { type: "string" },
  group: { type: "string" },
};

/**
 * A route's privilege on PVE `major`: PVE 8's guest agent API checks `VM.Monitor` for every
 * command (qemu-server stable-bookworm `PVE/API2/Qemu/Agent.pm` register_command's default, and
 * exec, exec-status, file-read, file-write), where PVE 9 checks the `VM.GuestAgent.*` privileges.
 */
function privilegeOn(privilege: string, major: 8 | 9): string {
  return major === 8 && privilege.includes("VM.GuestAgent.")
    ? "VM.Monitor"
    : privilege;
}

/** Routes compiled for matching. */
export class Router {
  readonly #routes: { route: Route; segments: string[] }[];

  /** @param routes every endpoint the simulator serves */
  constructor(routes: Route[]) {
    this.#routes = routes.map((route) => ({
      route,
      segments: route.path.split("/").slice(1),
    }));
  }

  /**
   * Answers one API request. `segments` are the decoded path segments after
   * `/api2/json`; `raw` holds query and body parameters.
   */
  async dispatch(
    core: SimCore,
    user: AuthUser,
    method: string,
    segments: string[],
    raw: RawParams,
  ): Promise<Response> {
    const relPath = "/" + segments.join("/");
    const found = this.#match(method, segments);
    if (!found || core.major < (found.route.since ?? 0)) {
      return errorResponse(
        501,
        `Method '${method} ${relPath}' not implemented`,
      );
    }
    const { route, pathParams } = found;
    let entry: ConformanceEntry | undefined;
    try {
      for (const key of Object.keys(pathParams)) {
        if (raw.has(key)) {
          throw new ApiError(
            400,
            `Parameter verification failed - duplicate parameter '${key}'`,
          );
        }
      }
      // PVE checks permissions on the raw path value, before anything else.
      if (
        route.privilege && pathParams.vmid !== undefined &&
        /^\d+$/.test(pathParams.vmid)
      ) {
        checkVmPerm(
          user,
          Number(pathParams.vmid),
          privilegeOn(route.privilege, core.major),
        );
      }
      // The request is proxied to the node in the path: an unknown node fails
      // there, as a name lookup (PVE's text).
      if (
        pathParams.node !== undefined && !core.state.hasNode(pathParams.node)
      ) {
        throw new ApiError(
          500,
          `hostname lookup '${pathParams.node}' failed - failed to get address info for: ${pathParams.node}: ` +
            "Name or service not known",
        );
      }
      const all: RawParams = new Map(raw);
      for (const [k, v] of Object.entries(pathParams)) all.set(k, [v]);
      entry = {
        method,
        template: route.path,
        path: relPath,
        decoding: user.decoding,
        params: [...raw.keys()].sort(),
      };
      const decoded = validateAgainstSchema(route, all, user, entry);
      const props: Record<string, ParamSpec> = { ...(route.params ?? {}) };
      for (const k of Object.keys(pathParams)) props[k] = PATH_PARAM_SPECS[k];
      const params = checkParams(decoded, { props, dynamic: route.dynamic });
      const ctx = { core, user, params };
      for (const rule of route.rules ?? []) rule(ctx);
      const result = await route.handler(ctx);
      const data = result instanceof Reply ? result.data : result;
      const violations = checkAnswer(
        returnsOf(method, route.path),
        data,
        route.path,
      );
      if (violations.length > 0) entry.answerViolations = violations;
      return dataResponse(result);
    } catch (err) {
      if (err instanceof ApiError) {
        return errorResponse(err.status, err.message, err.errors);
      }
      // An unexpected throw is a simulator bug: answer like PVE's die, but loudly.
      return errorResponse(
        500,
        `simulator internal error: ${(err as Error).stack ?? err}`,
      );
    } finally {
      // Every request that reached the schema check is counted, refused or not.
      if (entry) core.conformance.add(entry);
    }
  }

  /** The path templates the router serves, as `"<METHOD> <template>"`. */
  endpoints(): string[] {
    return this.#routes.map(({ route }) => `${route.method} ${route.path}`);
  }

  #match(
    method: string,
    segments: string[],
  ): { route: Route; pathParams: Record<string, string> } | undefined {
    for (const { route, segments: pattern } of this.#routes) {
      // pve-storage registers the content API with `fragmentDelimiter => ''` (Status.pm): the
      // rest of the path is the `{volume}`, slashes included (pvesh sends them unencoded).
      const given = pattern.at(-1) === "{volume}" &&
          segments.length > pattern.length
        ? [
          ...segments.slice(0, pattern.length - 1),
          segments.slice(pattern.length - 1).join("/"),
        ]
        : segments;
      if (route.method !== method || pattern.length !== given.length) {
        continue;
      }
      const pathParams: Record<string, string> = {};
      const ok = pattern.every((p, i) => {
        if (p.startsWith("{") && p.endsWith("}")) {
          pathParams[p.slice(1, -1)] = given[i];
          return given[i] !== "";
        }
        return p === given[i];
      });
      if (ok) return { route, pathParams };
    }
    return undefined;
  }
}

/**
 * PVE's own parameter check (pve-common JSONSchema.pm `validate`, run by
 * RESTHandler before the handler): every route passes through it, so a route
 * is held to PVE 9's schema for its method and path without declaring
 * anything. Records the verdict in the conformance log; throws PVE's 400 when
 * a node would refuse the request. Returns the parameters as PVE's handler
 * receives them (pvesh's booleans already 0/1).
 */
function validateAgainstSchema(
  route: Route,
  all: RawParams,
  user: AuthUser,
  entry: ConformanceEntry,
): RawParams {
  const facts = endpointFacts(route.method, route.path);
  if (!facts) {
    // A simulator route PVE does not have: a simulator bug, never a client's.
    throw new ApiError(
      500,
      `simulator route ${route.method} ${route.path} is not in PVE's API schema`,
    );
  }
  const verdict = checkParameters(facts, route.path, all, user.decoding);
  if (verdict.refusal) {
    entry.refusal = verdict.refusal;
    throw new ApiError(400, verdict.refusal);
  }
  if (Object.keys(verdict.errors).length > 0) {
    entry.paramErrors = verdict.errors;
    throw new ApiError(400, "Parameter verification failed.", verdict.errors);
  }
  const decoded: RawParams = new Map();
  for (const [k, v] of verdict.values) {
    decoded.set(k, Array.isArray(v) ? v : [v]);
  }
  return decoded;
}
