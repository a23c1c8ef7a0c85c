/**
 * The fault matrix's fileWrite and fileRead rows (qemu model): the guest agent's files are this
 * machine's (the simulator fronts a real qemu-ga), so each fileWrite cell writes its own file in a
 * temp dir, and fileRead reads one written once.
 *
 * @module
 */
import {
  AGENT_LOCK_FREE,
  guestPath,
  lastWrite,
  resources,
  type RowSpec,
  version,
  writesOnly,
} from "./methods.ts";

const ROOT = Deno.makeTempDirSync({ prefix: "swamp-matrix-files-" });
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(ROOT, { recursive: true });
  } catch {
    // already gone
  }
});
const WRITTEN = "hello from the matrix\n";
/**
 * The file fileRead reads: a fixed path, because MATRIX.md shows the row's arguments. Written by a
 * rename, so a matrix running at the same time never sees it half-written.
 */
const READ_ME = "/tmp/swamp-matrix-read-me.txt";
Deno.writeTextFileSync(`${ROOT}/read-me.txt`, "a file to read\n");
Deno.renameSync(`${ROOT}/read-me.txt`, READ_ME);
let serial = 0;

/** The file rows for VM `vmid` on node `n`. */
export function fileSpecs(n: string, vmid: number, names: RegExp): RowSpec[] {
  const read = (phase: string) => ({
    id: `GET agent/file-read${phase}`,
    method: "GET" as const,
    path: guestPath(n, vmid, "/agent/file-read"),
    sample: `/nodes/${n}/qemu/${vmid}/agent/file-read`,
    kind: "read" as const,
    pve500: "Agent error: Failed to open file: No such file or directory",
    privilege: `/vms/${vmid}, VM.GuestAgent.FileRead`,
  });
  const record = (r: Parameters<RowSpec["effect"]>[1]) =>
    lastWrite(r, `vm-${vmid}-file`);
  const contentOf = (path: unknown) => {
    try {
      return Deno.readTextFileSync(String(path));
    } catch {
      return undefined;
    }
  };
  const fileWrite: RowSpec = {
    name: "fileWrite",
    args: {},
    argsFor: () => ({
      vmid,
      path: `${ROOT}/w-${n}-${serial++}.txt`,
      content: WRITTEN,
    }),
    endpoints: [
      version,
      resources(),
      {
        id: "POST agent/file-write",
        method: "POST",
        path: guestPath(n, vmid, "/agent/file-write"),
        sample: `/nodes/${n}/qemu/${vmid}/agent/file-write`,
        kind: "mutation",
        pve500: "QEMU guest agent is not running",
        privilege: `/vms/${vmid}, VM.GuestAgent.FileWrite`,
        expect: {
          shape: {
            verdict: "fail",
            happened: /No such file or directory/,
            readBack: true,
            note:
              "file-write answers null; the read-back shows the file missing",
          },
        },
      },
      read(" (read back)"),
    ],
    names,
    task: false,
    lockFree: AGENT_LOCK_FREE,
    effect: (_env, r) => {
      const rec = record(r);
      return rec?.verified === true && contentOf(rec.path) === WRITTEN ? [] : [
        `succeeded but the file holds ${JSON.stringify(contentOf(rec?.path))}`,
      ];
    },
    truth: (_env, r) => {
      const problems = writesOnly(r, new RegExp(`^vm-${vmid}-file$`));
      const rec = record(r);
      if (rec?.verified === true && contentOf(rec.path) !== WRITTEN) {
        problems.push("records a verified write the file does not hold");
      }
      return problems;
    },
  };
  const fileRead: RowSpec = {
    name: "fileRead",
    args: { vmid, path: READ_ME },
    endpoints: [resources(), read("")],
    names,
    task: false,
    lockFree: AGENT_LOCK_FREE,
    effect: (_env, r) =>
      record(r)?.content === "a file to read\n"
        ? []
        : [`the record ${JSON.stringify(record(r))} is not the file`],
    truth: (_env, r) => [
      ...writesOnly(r, new RegExp(`^vm-${vmid}-file$`)),
      ...(r.status === "failed" && r.written.length > 0
        ? ["a failed fileRead wrote a record"]
        : []),
    ],
  };
  return [fileWrite, fileRead];
}
