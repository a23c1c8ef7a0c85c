/**
 * The fault matrix's downloadUrl rows (both models): the simulator fetches the URL from a loopback
 * image server started once per process (unref'd, so a process that only renders MATRIX.md still
 * exits), checks the checksum and stores the bytes. Besides the per-request faults, three
 * scenarios of a worker that lies or a file that is not the one asked for: the task ends OK but no
 * file was written (`no file`), a short file (`short file`), and a checksum that does not match
 * (`checksum✗`).
 *
 * @module
 */
import type { ScenarioPlan } from "./cell.ts";
import {
  lastWrite,
  type RowSpec,
  taskStatus,
  version,
  writesOnly,
} from "./methods.ts";
import { hexDigest, imageBytes } from "../../simulator/image_server.ts";

const IMAGE = imageBytes(200_000, 11);
const TEMPLATE = imageBytes(40_000, 13);
const FILES: Record<string, Uint8Array> = {
  "/cloud.qcow2": IMAGE,
  "/ct.tar.zst": TEMPLATE,
};

const server = Deno.serve(
  { hostname: "127.0.0.1", port: 0, onListen: () => {} },
  (req) => {
    const data = FILES[new URL(req.url).pathname];
    if (!data) return new Response("not found", { status: 404 });
    return new Response(req.method === "HEAD" ? null : data as BodyInit, {
      headers: { "content-length": String(data.length) },
    });
  },
);
server.unref();
const BASE = `http://127.0.0.1:${server.addr.port}`;

/** The downloadUrl row of one model: an import image (qemu) or a container template (lxc). */
export function downloadSpec(model: "qemu" | "lxc"): RowSpec {
  const n = "pve1";
  const [content, file, data] = model === "qemu"
    ? ["import", "cloud.qcow2", IMAGE] as const
    : ["vztmpl", "ct.tar.zst", TEMPLATE] as const;
  const volid = `local:${content}/${file}`;
  const instance = `volume-local-${file}`;
  const args = (base: string, digest = hexDigest("sha256", data)) => ({
    storage: "local",
    content,
    url: `${base}/${file}`,
    filename: file,
    checksum: digest,
    checksumAlgorithm: "sha256",
  });
  const read = (
    path: string,
    id: string,
    pve500: string,
    privilege: string,
    skip = 0,
  ) => ({
    id,
    method: "GET" as const,
    path: `^/api2/json/nodes/${n}/${path}$`,
    sample: `/nodes/${n}/${path}`,
    kind: "read" as const,
    skip,
    pve500,
    privilege,
  });
  const contentRead = (phase: string, skip: number) =>
    read(
      "storage/local/content",
      `GET storage/local/content (${phase})`,
      "unable to activate storage 'local' - directory '/var/lib/vz' does not exist or is unreachable",
      "/storage/local, Datastore.Audit",
      skip,
    );
  const stored = (env: Parameters<RowSpec["effect"]>[0]) => {
    const store = env.sim.storage(n, "local");
    return content === "vztmpl"
      ? store?.templates.find((t) => t.file === file)
      : store?.files.find((f) => f.content === content && f.file === file);
  };
  const fails = (happened: RegExp, arm?: ScenarioPlan["arm"]) => ({
    plan: { expected: "fail" as const, happened, arm },
  });
  return {
    name: "downloadUrl",
    // MATRIX.md shows these; each cell gets the live server's port (argsFor).
    args: args("http://127.0.0.1:<port>"),
    argsFor: () => args(BASE),
    prepare: (env) => {
      const local = env.sim.storage(n, "local");
      if (local && !local.content.includes(content)) {
        local.content.push(content);
      }
    },
    endpoints: [
      version,
      read(
        "storage",
        "GET /nodes/<node>/storage",
        "got timeout",
        `/nodes/${n}, Sys.Audit`,
      ),
      contentRead("is it there?", 0),
      read(
        "query-url-metadata",
        "GET /nodes/<node>/query-url-metadata",
        "invalid server response: '500 Can't connect to 127.0.0.1:1 (Connection refused)'",
        "/nodes/pve1, Sys.AccessNetwork",
      ),
      {
        id: "POST storage/local/download-url",
        method: "POST",
        path: `^/api2/json/nodes/${n}/storage/local/download-url$`,
        sample: `/nodes/${n}/storage/local/download-url`,
        kind: "mutation",
        pve500:
          `storage 'local' is not configured for content-type '${content}'`,
        privilege: "/storage/local, Datastore.AllocateTemplate",
      },
      taskStatus(n, "download"),
      read(
        "tasks/[^/]+/log",
        "GET tasks/…/log (the checksum line)",
        "unable to open file '/var/log/pve/tasks/…' - No such file or directory",
        `/nodes/${n}, Sys.Audit`,
      ),
      contentRead("after the task", 1),
    ],
    names: new RegExp(volid.replace(/[.]/g, "\\.")),
    task: true,
    fileScenarios: {
      "no file": fails(
        /ended OK, but .* is not in the .* content of storage local/,
        (env) => env.sim.nextTask({ noEffect: true }),
      ),
      "short file": fails(
        /has 1000 bytes where the URL's file has \d+ \(a short or altered download\)/,
        (env) => env.sim.nextTask({ truncateTo: 1000 }),
      ),
      "checksum✗": {
        ...fails(/checksum mismatch: got '[0-9a-f]{64}' != expect '0{64}'/),
        args: args(BASE, "0".repeat(64)),
      },
    },
    effect: (env, r) => {
      const rec = lastWrite(r, instance);
      const have = stored(env);
      const problems: string[] = [];
      if (!have || have.data?.length !== data.length) {
        problems.push(
          `succeeded but ${volid} holds ${have?.data?.length} bytes`,
        );
      }
      if (rec?.present !== true || rec.size !== data.length) {
        problems.push(`record ${JSON.stringify(rec)} is not the volume`);
      }
      if (rec?.checksumVerified !== true) {
        problems.push("succeeded without PVE's checksum line");
      }
      return problems;
    },
    truth: (env, r) => {
      const problems = writesOnly(
        r,
        new RegExp(`^${instance.replace(/[.]/g, "\\.")}$`),
      );
      const rec = lastWrite(r, instance);
      const have = stored(env);
      if (rec?.present === true && have?.data?.length !== rec.size) {
        problems.push(
          `records ${volid} with ${rec.size} bytes; the storage holds ${have?.data?.length}`,
        );
      }
      if (rec?.present === false && have) {
        problems.push(`records ${volid} absent; the storage holds it`);
      }
      return problems;
    },
  };
}
