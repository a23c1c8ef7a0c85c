/**
 * One real QEMU virtual machine (Debian's qemu-system-x86, TCG) booting the test guest image
 * (scripts/guest_image.sh): the process, its QMP monitor and its guest agent channel.
 *
 * The command line follows what qemu-server builds for a VM (`PVE/QemuServer.pm`
 * config_to_command): `-name`, a QMP socket `-mon … mode=control`, the agent's
 * virtio-serial port `org.qemu.guest_agent.0` on a unix socket, `-smbios type=1` from the
 * config's `smbios1` (so the guest's DMI uuid is the config's), the NIC's MAC from `net0`.
 * Differences, for this machine: no `-id` (an option of PVE's patched QEMU only), the kernel and initramfs are passed directly (no firmware disk
 * boot), networking is QEMU's user network (slirp: DHCP 10.0.2.15, IPv6 SLAAC in 2001:db8:5a::/64)
 * instead of a tap on a bridge, one vCPU under TCG and memory capped (see MAX_MEMORY_MB).
 *
 * @module
 */

import { LineReader, writeAll } from "./lines.ts";
import { VirtioAgent } from "./virtio_agent.ts";

/** The built image (paths inside the directory scripts/guest_image.sh prints). */
export interface GuestImage {
  dir: string;
  kernel: string;
  initrd: string;
  /** The base data disk; every VM runs on its own qcow2 overlay of it. */
  disk: string;
}

/** The image in `dir` (as printed by scripts/guest_image.sh). */
export function guestImageAt(dir: string): GuestImage {
  return {
    dir,
    kernel: `${dir}/vmlinuz`,
    initrd: `${dir}/initrd.img`,
    disk: `${dir}/disk.qcow2`,
  };
}

/** What to boot. */
export interface RealVmSpec {
  image: GuestImage;
  /** This VM's own directory: its disk overlay (kept across boots), sockets, console log. */
  dir: string;
  /** The VM's disk file (default `<dir>/disk.qcow2`; a moved disk lives elsewhere). */
  disk?: string;
  vmid: number;
  name: string;
  memoryMb: number;
  /** The NIC's MAC (from `net0`); QEMU's default when absent. */
  mac?: string;
  /** SMBIOS type 1 uuid (from `smbios1`). */
  uuid?: string;
  /** false: the guest boots without starting its agent (an agent configured but never up). */
  agentInGuest: boolean;
  /** `tcg` (default) or `kvm` (only where a KVM boot was shown to work). */
  accel?: "tcg" | "kvm";
  /** A state file a suspend to disk saved (real_guests.ts `hibernate`): QEMU loads it and runs on. */
  incoming?: string;
}

/** The block backend of the VM's one disk (the guest's `virtio0`). */
export const DRIVE_ID = "drive-virtio0";

/** A guest of 512 MiB boots in the same time as one of 8 GiB; more only costs host memory. */
const MAX_MEMORY_MB = 512;
/** The IPv6 network of the guest's user-mode NIC (RFC 3849's documentation prefix). */
const IPV6_NET = "2001:db8:5a::/64";
/** How long the QEMU process may take to open its QMP socket. */
const LAUNCH_TIMEOUT_MS = 15_000;

/** A QMP error reply (`{"error": {"class", "desc"}}`). */
export class QmpError extends Error {
  /** @param desc QEMU's error text */
  constructor(desc: string) {
    super(desc);
    this.name = "QmpError";
  }
}

/** A running (or exited) QEMU process. */
export class RealVm {
  /** Host pid of QEMU: the guest's `pid` in status/current. */
  readonly pid: number;
  /** When QEMU was launched (epoch ms); PVE's uptime counts from the process start. */
  readonly launchedAt: number;
  /** The guest agent behind the virtio-serial port. */
  readonly agent: VirtioAgent;
  /** The guest's serial console (kernel messages, what the guest's init writes), kept after exit. */
  readonly consolePath: string;
  /** Resolves when the QEMU process has exited (guest poweroff, quit, signal). */
  readonly exited: Promise<void>;
  readonly #child: Deno.ChildProcess;
  readonly #qmpPath: string;
  #alive = true;
  #stderr = "";
  #qmpTail: Promise<void> = Promise.resolve();
  readonly #onUnload = () => {
    try {
      Deno.kill(this.pid, "SIGKILL");
    } catch {
      // already gone
    }
  };

  private constructor(child: Deno.ChildProcess, dir: string) {
    this.#child = child;
    this.pid = child.pid;
    this.launchedAt = Date.now();
    this.#qmpPath = `${dir}/qmp.sock`;
    this.consolePath = `${dir}/console.log`;
    this.agent = new VirtioAgent(`${dir}/qga.sock`);
    const stderr = new Response(child.stderr).text().then((t) => {
      this.#stderr = t;
    });
    this.exited = Promise.all([child.status, stderr]).then(() => {
      this.#alive = false;
      globalThis.removeEventListener("unload", this.#onUnload);
    });
    // A test process that ends without cleaning up must not leave a VM spinning a CPU.
    globalThis.addEventListener("unload", this.#onUnload);
  }

  /** Launches QEMU and resolves once its QMP monitor answers (the guest is then booting). */
  static async launch(spec: RealVmSpec): Promise<RealVm> {
    await ensureOverlay(spec);
    for (const sock of ["qmp.sock", "qga.sock"]) {
      await Deno.remove(`${spec.dir}/${sock}`).catch(() => {});
    }
    const child = new Deno.Command("qemu-system-x86_64", {
      args: qemuArgs(spec),
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const vm = new RealVm(child, spec.dir);
    const deadline = Date.now() + LAUNCH_TIMEOUT_MS;
    for (;;) {
      if (!vm.alive) {
        await vm.exited;
        throw new Error(`QEMU exited at launch: ${vm.stderrTail()}`);
      }
      try {
        await vm.qmp("query-status");
        return vm;
      } catch (err) {
        if (err instanceof QmpError) return vm;
      }
      if (Date.now() > deadline) {
        await vm.kill("SIGKILL");
        throw new Error(
          `QEMU's QMP socket did not answer within ${LAUNCH_TIMEOUT_MS} ms`,
        );
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Whether the QEMU process still runs. */
  get alive(): boolean {
    return this.#alive;
  }

  /** The last lines QEMU wrote to stderr (after it exited). */
  stderrTail(): string {
    return this.#stderr.trim().split("\n").slice(-3).join(" / ") || "no output";
  }

  /**
   * One QMP command over a fresh monitor connection (greeting, qmp_capabilities, command), as
   * qemu-server's QMPClient does; events are skipped. Rejects with QmpError for an error reply.
   */
  qmp(
    command: string,
    args?: Record<string, unknown>,
    timeoutMs = 5_000,
  ): Promise<unknown> {
    const run = this.#qmpTail.then(() =>
      qmpExchange(this.#qmpPath, command, args, timeoutMs)
    );
    this.#qmpTail = run.then(() => {}, () => {});
    return run;
  }

  /** Resolves true when QEMU exits within `ms`, false otherwise. */
  async waitExit(ms: number): Promise<boolean> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const exited = await Promise.race([
      this.exited.then(() => true),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), ms);
      }),
    ]);
    clearTimeout(timer);
    return exited;
  }

  /** Sends `signal` to QEMU and waits for it to exit. */
  async kill(signal: Deno.Signal): Promise<void> {
    if (this.#alive) {
      try {
        this.#child.kill(signal);
      } catch {
        // exited meanwhile
      }
    }
    await this.exited;
  }
}

/** Where the VM's disk is. */
function diskPath(spec: RealVmSpec): string {
  return spec.disk ?? `${spec.dir}/disk.qcow2`;
}

function qemuArgs(spec: RealVmSpec): string[] {
  const d = spec.dir;
  const append = [
    "console=ttyS0",
    "quiet",
    "panic=-1",
    `hostname=${spec.name}`,
    ...(spec.agentInGuest ? [] : ["qga=off"]),
  ].join(" ");
  return [
    "-name",
    `${spec.name},debug-threads=on`,
    "-machine",
    `pc,accel=${spec.accel ?? "tcg"}`,
    "-m",
    String(Math.min(spec.memoryMb, MAX_MEMORY_MB)),
    "-smp",
    "1",
    "-nodefaults",
    "-no-user-config",
    "-display",
    "none",
    "-kernel",
    spec.image.kernel,
    "-initrd",
    spec.image.initrd,
    "-append",
    append,
    "-serial",
    `file:${d}/console.log`,
    "-chardev",
    `socket,id=qmp,path=${d}/qmp.sock,server=on,wait=off`,
    "-mon",
    "chardev=qmp,mode=control",
    "-chardev",
    `socket,path=${d}/qga.sock,server=on,wait=off,id=qga0`,
    "-device",
    "virtio-serial,id=qga0",
    "-device",
    "virtserialport,chardev=qga0,name=org.qemu.guest_agent.0",
    "-netdev",
    // slirp's router advertisements hand out a global prefix (2000::/3; the documentation range)
    // instead of its default site-local fec0::/64, as a real network would.
    `user,id=net0,ipv6-net=${IPV6_NET}`,
    "-device",
    `virtio-net-pci,netdev=net0${spec.mac ? `,mac=${spec.mac}` : ""}`,
    "-drive",
    // The drive's id as qemu-server names it (`drive-<key>`): block jobs address it by that.
    `file=${diskPath(spec)},if=virtio,format=qcow2,id=${DRIVE_ID}`,
    ...(spec.uuid ? ["-smbios", `type=1,uuid=${spec.uuid}`] : []),
    ...(spec.incoming ? ["-incoming", `exec:cat ${spec.incoming}`] : []),
  ];
}

/** The VM's own disk: a qcow2 overlay on the image's base disk, made at first boot, kept after. */
async function ensureOverlay(spec: RealVmSpec): Promise<void> {
  const path = diskPath(spec);
  try {
    await Deno.stat(path);
    return;
  } catch {
    // first boot
  }
  const out = await new Deno.Command("qemu-img", {
    args: [
      "create",
      "-q",
      "-f",
      "qcow2",
      "-b",
      spec.image.disk,
      "-F",
      "qcow2",
      path,
    ],
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(
      `qemu-img could not create ${path}: ${
        new TextDecoder().decode(out.stderr).trim()
      }`,
    );
  }
}

async function qmpExchange(
  path: string,
  command: string,
  args: Record<string, unknown> | undefined,
  timeoutMs: number,
): Promise<unknown> {
  const conn = await Deno.connect({ transport: "unix", path });
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      qmpTalk(conn, command, args),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          try {
            conn.close();
          } catch {
            // closed
          }
          reject(new Error(`QMP ${command}: got timeout`));
        }, timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch {
      // closed by the timeout
    }
  }
}

async function qmpTalk(
  conn: Deno.UnixConn,
  command: string,
  args: Record<string, unknown> | undefined,
): Promise<unknown> {
  const reader = new LineReader(conn);
  const send = (obj: unknown) =>
    writeAll(conn, new TextEncoder().encode(JSON.stringify(obj) + "\n"));
  const reply = async (id: string) => {
    for (;;) {
      const line = await reader.readLine();
      if (line === null) throw new Error(`QMP closed during ${command}`);
      const msg = JSON.parse(line) as {
        id?: string;
        return?: unknown;
        error?: { desc: string };
        event?: string;
        QMP?: unknown;
      };
      if (msg.QMP || msg.event || msg.id !== id) continue;
      if (msg.error) throw new QmpError(msg.error.desc);
      return msg.return;
    }
  };
  await send({ execute: "qmp_capabilities", id: "cap" });
  await reply("cap");
  await send(
    args
      ? { execute: command, arguments: args, id: "cmd" }
      : { execute: command, id: "cmd" },
  );
  return await reply("cmd");
}
