/**
 * Guests marked `real`: the simulator's power and agent routes drive a real QEMU VM (real_vm.ts)
 * for them, and PVE's task and lock behaviour wraps it as for every guest.
 *
 * What is real for such a guest: the QEMU process (its pid is the guest's `pid`, its QMP
 * `query-status` the `qmpstatus`), the boot (a start task ends when QEMU runs, the agent comes up
 * seconds later), the guest agent inside (exec, files, the guest's own interfaces and addresses),
 * the shutdown the guest performs (through its agent or the ACPI button), a reboot that starts a
 * new QEMU process, and a guest that powers itself off (the guest is then stopped). What stays
 * simulated: the config, storage, tasks, locks, HA and permissions — the PVE side.
 *
 * Suspend and resume follow qemu-server `PVE/QemuServer/RunState.pm`: to RAM QMP `stop`, resumed
 * by `cont` (`system_wakeup` for a guest that suspended itself); to disk the VM's state is saved to
 * a file and QEMU quits, and the next start loads it and runs on — the same guest, the same boot.
 * PVE saves with its own QEMU's `savevm-start`; upstream QEMU here saves by migrating to a file
 * (`migrate exec:cat > …`) and loads with `-incoming`.
 *
 * Power semantics follow qemu-server `PVE/QemuServer.pm` _do_vm_stop (stop: QMP `quit`;
 * shutdown: `guest-shutdown` when the agent is enabled and answers a ping, else
 * `system_powerdown`; then wait `timeout` s — default 60 — for the process to end; stop, or
 * shutdown with `forceStop`, then SIGTERM, and SIGKILL 10 s later) and vm_reboot (a shutdown,
 * after which qmeventd's `qm cleanup` starts the VM again in a new `qmstart` task,
 * `PVE/CLI/qm.pm` cleanup).
 *
 * @module
 */

import type { ClusterState } from "./state.ts";
import type { TaskManager } from "./tasks.ts";
import { TaskFailure } from "./tasks.ts";
import type { GuestState } from "./types.ts";
import { DRIVE_ID, RealVm } from "./real_vm.ts";
import type { VirtioAgent } from "./virtio_agent.ts";
import type { Params } from "./params.ts";
import type { RealGuestOptions } from "./real_guest_options.ts";

export type { RealGuestOptions } from "./real_guest_options.ts";

/** PVE's default wait for a VM to stop (`_do_vm_stop`: `$timeout = 60 if !defined($timeout)`). */
const DEFAULT_STOP_TIMEOUT_S = 60;
/** After SIGTERM, PVE waits this long before SIGKILL. */
const TERM_WAIT_S = 10;

/** The real VMs behind the guests marked `real`. */
export class RealGuests {
  readonly #opts: RealGuestOptions;
  readonly #state: ClusterState;
  readonly #tasks: TaskManager;
  /** The running QEMU of each guest, by VMID. */
  readonly #vms = new Map<number, RealVm>();
  /** Each guest's own directory (disk overlay, sockets); a re-created VMID gets a new one. */
  readonly #dirs = new WeakMap<GuestState, string>();
  readonly #allDirs: string[] = [];
  /** Each guest's disk file where a move put it elsewhere than `<dir>/disk.qcow2`. */
  readonly #disks = new WeakMap<GuestState, string>();
  /** The state a suspend to disk saved, by VMID: the next start loads it. */
  readonly #saved = new Map<number, string>();
  #root?: string;

  /** @param opts the image; @param state the cluster; @param tasks for the restart after a reboot */
  constructor(opts: RealGuestOptions, state: ClusterState, tasks: TaskManager) {
    this.#opts = opts;
    this.#state = state;
    this.#tasks = tasks;
  }

  /** Whether `g` is driven by a real VM. */
  isReal(g: GuestState): boolean {
    return g.real === true && g.type === "qemu";
  }

  /** The running VM of guest `vmid`, if any (tests read its pid, console, agent). */
  vm(vmid: number): RealVm | undefined {
    return this.#vms.get(vmid);
  }

  /** The agent channel of a running real guest. */
  agentOf(g: GuestState): VirtioAgent | undefined {
    return this.#vms.get(g.vmid)?.agent;
  }

  /** Boots every real guest a test declared as running (at simulator start). */
  async bootDeclared(): Promise<void> {
    for (const g of this.#state.all()) {
      if (this.isReal(g) && g.status === "running") await this.#boot(g);
    }
  }

  /** Refreshes `qmpstatus` from QMP (status/current reads it live, as PVE does). */
  async refresh(g: GuestState): Promise<void> {
    const vm = this.#vms.get(g.vmid);
    if (!vm?.alive) return;
    try {
      const s = await vm.qmp("query-status") as { status: string };
      g.qmpstatus = s.status;
    } catch {
      // QEMU is going away: PVE then reports what `check_running` sees; the exit watcher follows.
    }
  }

  /**
   * The effect of a start/stop/shutdown/reboot task on a real guest; resolves to the task's
   * warnings, rejects (TaskFailure) with PVE's exitstatus.
   */
  power(
    action: "start" | "stop" | "shutdown" | "reboot",
    g: GuestState,
    params: Params,
  ): Promise<string[]> {
    const timeoutS = typeof params.timeout === "number"
      ? params.timeout
      : DEFAULT_STOP_TIMEOUT_S;
    switch (action) {
      case "start":
        return this.#start(g);
      case "stop":
        return this.#stop(g, timeoutS, false, true);
      case "shutdown":
        return this.#stop(g, timeoutS, true, params.forceStop === true);
      case "reboot":
        return this.#reboot(g, timeoutS);
    }
  }

  /** A suspend to RAM of a real guest: QMP `stop` (qemu-server RunState.pm vm_suspend). */
  async pause(g: GuestState): Promise<void> {
    const vm = this.#vms.get(g.vmid);
    if (!vm?.alive) throw new TaskFailure(`VM ${g.vmid} not running`);
    await vm.qmp("stop");
  }

  /**
   * A resume of a real guest (RunState.pm vm_resume): `system_wakeup` when its guest suspended
   * itself, else QMP `cont`.
   */
  async wake(g: GuestState): Promise<void> {
    const vm = this.#vms.get(g.vmid);
    if (!vm?.alive) throw new TaskFailure(`VM ${g.vmid} not running`);
    const { status } = await vm.qmp("query-status") as { status: string };
    if (status === "running") return;
    await vm.qmp(status === "suspended" ? "system_wakeup" : "cont");
  }

  /**
   * A suspend to disk of a real guest: its state saved to a file in its directory, then QEMU quits
   * (RunState.pm vm_suspend: `savevm-start`, `query-savevm` until completed, `quit`).
   */
  async hibernate(g: GuestState): Promise<void> {
    const vm = this.#vms.get(g.vmid);
    if (!vm?.alive) throw new TaskFailure(`VM ${g.vmid} not running`);
    const file = `${await this.#dirOf(g)}/vmstate`;
    await vm.qmp("migrate", { uri: `exec:cat > ${file}` });
    for (;;) {
      const s = await vm.qmp("query-migrate") as {
        status?: string;
        "error-desc"?: string;
      };
      if (s.status === "completed") break;
      if (s.status === "failed" || s.status === "cancelled") {
        throw new TaskFailure(
          `query-savevm failed with error '${s["error-desc"] ?? s.status}'`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    this.#saved.set(g.vmid, file);
    await vm.qmp("quit", undefined, 60_000).catch(() => {});
    await vm.waitExit(10_000);
    this.#onExit(g.vmid, vm);
  }

  /**
   * What a backup of real guest `g` holds of its disk: a copy of its qcow2 overlay as it is now
   * (a stopped guest's is consistent: its shutdown unmounted /data; a running one's is copied as it
   * stands, without the agent's fs-freeze PVE would ask for). Undefined when the guest never booted:
   * its disk is then the image's base disk, which every restore starts from anyway.
   */
  async archiveDisk(g: GuestState): Promise<string | undefined> {
    const dir = this.#dirs.get(g);
    if (!dir) return undefined;
    const disk = this.#diskOf(g, dir);
    const exists = await Deno.stat(disk).then(() => true, () => false);
    if (!exists) return undefined;
    this.#root ??= await Deno.makeTempDir({ prefix: "sim-real-guests-" });
    const copy =
      `${this.#root}/archive-${g.vmid}-${this.#allDirs.length}-${Date.now()}.qcow2`;
    await Deno.copyFile(disk, copy);
    return copy;
  }

  /** Gives guest `g` (restored, not running) the archived disk `path` as its own overlay. */
  async restoreDisk(g: GuestState, path: string): Promise<void> {
    await Deno.copyFile(path, this.#diskOf(g, await this.#dirOf(g)));
  }

  /** Gives guest `g` (created, not yet booted) the disk image `bytes` (a qcow2) as its own. */
  async adoptDisk(g: GuestState, bytes: Uint8Array): Promise<void> {
    await Deno.writeFile(this.#diskOf(g, await this.#dirOf(g)), bytes);
  }

  /**
   * Moves real guest `g`'s disk to a new file standing for its volume on `storage` (a directory of
   * that name in the guest's own): a running VM's by a QMP `drive-mirror` that is completed once
   * ready (qemu-server `PVE/QemuServer/BlockJob.pm` qemu_drive_mirror and monitor), so QEMU runs
   * on the new file from then on; a stopped one's by `qemu-img convert` (`QemuImage.pm` convert).
   * The VM boots from the new file afterwards; with `dropOld` the old file is removed.
   */
  async moveDisk(
    g: GuestState,
    storage: string,
    dropOld: boolean,
  ): Promise<void> {
    const dir = await this.#dirOf(g);
    const from = this.#diskOf(g, dir);
    await Deno.mkdir(`${dir}/${storage}`, { recursive: true });
    const to =
      `${dir}/${storage}/disk-${this.#allDirs.length}-${Date.now()}.qcow2`;
    const vm = this.#vms.get(g.vmid);
    const had = await Deno.stat(from).then(() => true, () => false);
    try {
      if (vm?.alive) await mirror(vm, to);
      else if (had) await convert(from, to);
    } catch (err) {
      await Deno.remove(to).catch(() => {});
      throw new TaskFailure(
        `storage migration failed: ${(err as Error).message}`,
      );
    }
    this.#disks.set(g, to);
    if (dropOld && had) await Deno.remove(from);
  }

  /** The file the guest's disk is in now. */
  diskFile(g: GuestState): string | undefined {
    const dir = this.#dirs.get(g);
    return dir && this.#diskOf(g, dir);
  }

  #diskOf(g: GuestState, dir: string): string {
    return this.#disks.get(g) ?? `${dir}/disk.qcow2`;
  }

  /** Kills every VM and removes their directories. */
  async close(): Promise<void> {
    await Promise.all([...this.#vms.values()].map((vm) => vm.kill("SIGKILL")));
    this.#vms.clear();
    if (this.#root) {
      await Deno.remove(this.#root, { recursive: true }).catch(() => {});
    }
  }

  async #start(g: GuestState): Promise<string[]> {
    if (this.#vms.get(g.vmid)?.alive) {
      throw new TaskFailure(`VM ${g.vmid} already running`);
    }
    try {
      await this.#boot(g);
    } catch (err) {
      throw new TaskFailure(`start failed: ${(err as Error).message}`);
    }
    return [];
  }

  async #boot(g: GuestState): Promise<void> {
    const incoming = this.#saved.get(g.vmid);
    const vm = await RealVm.launch({
      image: this.#opts.image,
      dir: await this.#dirOf(g),
      disk: this.#disks.get(g),
      vmid: g.vmid,
      name: g.name,
      memoryMb:
        Number(String(g.config.memory ?? "").replace(/^current=/, "")) ||
        512,
      mac: macOf(g),
      uuid: /(?:^|,)uuid=([0-9a-fA-F-]{36})/.exec(
        String(g.config.smbios1 ?? ""),
      )
        ?.[1],
      // `agent: configured` = enabled in the config but nothing answers inside: boot without it.
      agentInGuest: g.agent !== "configured",
      accel: this.#opts.accel,
      incoming,
    });
    // vm_start frees the state volume once the VM runs from it.
    if (incoming) {
      this.#saved.delete(g.vmid);
      vm.exited.then(() => Deno.remove(incoming).catch(() => {}));
    }
    this.#vms.set(g.vmid, vm);
    this.#state.start(g);
    g.pid = vm.pid;
    g.startedAt = vm.launchedAt;
    // Whatever ends QEMU (poweroff inside the guest, quit, a signal), the guest is then stopped.
    vm.exited.then(() => this.#onExit(g.vmid, vm));
  }

  #onExit(vmid: number, vm: RealVm): void {
    if (this.#vms.get(vmid) !== vm) return;
    this.#vms.delete(vmid);
    const live = this.#state.get(vmid);
    if (live && live.status === "running" && live.pid === vm.pid) {
      this.#state.stop(live);
    }
  }

  /** qemu-server _do_vm_stop for a real VM. */
  async #stop(
    g: GuestState,
    timeoutS: number,
    shutdown: boolean,
    force: boolean,
  ): Promise<string[]> {
    const vm = this.#vms.get(g.vmid);
    if (!vm?.alive) return [];
    const warnings: string[] = [];
    let requestFailed = false;
    try {
      if (!shutdown) await vm.qmp("quit", undefined, 60_000);
      else if (g.agent !== "none" && await agentAnswers(vm)) {
        await vm.agent.call("guest-shutdown", undefined, { noReply: true });
      } else await vm.qmp("system_powerdown");
    } catch {
      requestFailed = vm.alive;
    }
    if (requestFailed) {
      if (!vm.alive) {
        warnings.push(
          "Unexpected: VM shutdown command failed, but VM not running anymore..",
        );
        return this.#stopped(g, vm, warnings);
      }
      if (!force) throw new TaskFailure("VM quit/powerdown failed");
      warnings.push("VM quit/powerdown failed - terminating now with SIGTERM");
    } else if (!await vm.waitExit(timeoutS * 1000)) {
      if (!force) {
        throw new TaskFailure("VM quit/powerdown failed - got timeout");
      }
      warnings.push("VM still running - terminating now with SIGTERM");
    } else {
      return this.#stopped(g, vm, warnings);
    }
    await vm.kill("SIGTERM").then(() => {}, () => {});
    if (!await vm.waitExit(TERM_WAIT_S * 1000)) {
      warnings.push("VM still running - terminating now with SIGKILL");
      await vm.kill("SIGKILL");
    }
    return this.#stopped(g, vm, warnings);
  }

  #stopped(g: GuestState, vm: RealVm, warnings: string[]): string[] {
    this.#onExit(g.vmid, vm);
    return warnings;
  }

  /** vm_reboot: shut down; qmeventd then starts the VM again in its own task. */
  async #reboot(g: GuestState, timeoutS: number): Promise<string[]> {
    const warnings = await this.#stop(g, timeoutS, true, false);
    this.#tasks.start({
      node: g.node,
      type: "qmstart",
      id: String(g.vmid),
      user: "root@pam",
      run: () => {
        const live = this.#state.get(g.vmid);
        if (!live || live !== g) {
          throw new TaskFailure(`VM ${g.vmid} does not exist anymore`);
        }
        return this.#start(live);
      },
    });
    return warnings;
  }

  async #dirOf(g: GuestState): Promise<string> {
    const known = this.#dirs.get(g);
    if (known) return known;
    this.#root ??= await Deno.makeTempDir({ prefix: "sim-real-guests-" });
    const dir = `${this.#root}/${g.vmid}-${this.#allDirs.length}`;
    await Deno.mkdir(dir);
    this.#dirs.set(g, dir);
    this.#allDirs.push(dir);
    return dir;
  }
}

/** How long a drive mirror of the test guest's small disk may take to become ready. */
const MIRROR_READY_MS = 60_000;

/** A block job as `query-block-jobs` lists it. */
interface BlockJob {
  device: string;
  ready?: boolean;
}

/**
 * A full `drive-mirror` of the VM's disk to a new qcow2 `to` (QEMU creates it), completed once
 * the job is ready: QEMU then runs on `to`. Throws QEMU's error or a timeout.
 */
async function mirror(vm: RealVm, to: string): Promise<void> {
  const job = "mirror-virtio0";
  await vm.qmp("drive-mirror", {
    device: DRIVE_ID,
    "job-id": job,
    target: to,
    format: "qcow2",
    sync: "full",
    mode: "absolute-paths",
  });
  const jobs = async () => (await vm.qmp("query-block-jobs")) as BlockJob[];
  const until = async (done: (j?: BlockJob) => boolean, what: string) => {
    const deadline = Date.now() + MIRROR_READY_MS;
    while (!done((await jobs()).find((j) => j.device === job))) {
      if (Date.now() > deadline) {
        throw new Error(`block job (mirror) ${what}: got timeout`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  await until((j) => j?.ready === true, "ready");
  await vm.qmp("block-job-complete", { device: job });
  await until((j) => j === undefined, "complete");
}

/** A stopped VM's disk copied to a standalone qcow2 `to` (`qemu-img convert`). */
async function convert(from: string, to: string): Promise<void> {
  const out = await new Deno.Command("qemu-img", {
    args: ["convert", "-O", "qcow2", from, to],
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(
      `copy failed: ${new TextDecoder().decode(out.stderr).trim()}`,
    );
  }
}

/** qemu-server qga_check_running: a guest-ping answered within 3 s. */
async function agentAnswers(vm: RealVm): Promise<boolean> {
  try {
    await vm.agent.call("guest-ping");
    return true;
  } catch {
    return false;
  }
}

/** The MAC of the guest's net0 (`virtio=BC:24:11:…,bridge=…`). */
function macOf(g: GuestState): string | undefined {
  return /=([0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5})/.exec(
    String(g.config.net0 ?? ""),
  )?.[1]
    ?.toLowerCase();
}
