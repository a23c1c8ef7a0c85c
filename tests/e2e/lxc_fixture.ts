/**
 * The containers the lxc end-to-end tests run against, and a fixture running the lxc model on the
 * demo cluster plus them.
 *
 * @module
 */
import { model as lxcModel } from "../../js/proxmox_lxc.ts";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import type { SimGuest } from "../../simulator/types.ts";
import { type Env, type EnvOptions, withEnv } from "./env.ts";

/** The template every node's `local` storage holds (the simulator's default). */
export const TEMPLATE = "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst";

/** A create of container 400 (`web-400`) from {@link TEMPLATE} on local-lvm, 2 GiB root disk. */
export const CREATE_400 = {
  vmid: 400,
  ostemplate: TEMPLATE,
  hostname: "web-400",
  storage: "local-lvm",
  rootfsSize: 2,
};

/** A container's netN with a static address on vmbr0. */
export const staticNet = (ip: string) =>
  `name=eth0,bridge=vmbr0,gw=10.0.0.1,hwaddr=BC:24:11:00:00:01,ip=${ip}/24,type=veth`;

/** A container; the defaults make a stopped, managed one on pve1. */
export function container(
  vmid: number,
  over: Partial<SimGuest> = {},
): SimGuest {
  return {
    vmid,
    node: "pve1",
    type: "lxc",
    name: `ct${vmid}`,
    status: "stopped",
    tags: ["swamp"],
    ...over,
    config: {
      arch: "amd64",
      ostype: "debian",
      memory: 512,
      rootfs: `local-lvm:vm-${vmid}-disk-0,size=8G`,
      net0: staticNet(`10.0.0.${vmid % 250}`),
      ...over.config,
    },
  };
}

/**
 * The containers: 300 running (static IP), 301 stopped with `ip=dhcp`, 302 on pve2, 303 without
 * the swamp tag, 304 tagged production — besides the demo cluster's VMs (100…) and container 200.
 */
export function containers(): SimGuest[] {
  return [
    container(300, { name: "web-ct", status: "running" }),
    container(301, {
      name: "dhcp-ct",
      config: {
        net0:
          "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:03:01,ip=dhcp,type=veth",
      },
    }),
    container(302, { name: "far-ct", node: "pve2" }),
    container(303, { name: "plain-ct", tags: [] }),
    container(304, { name: "prod-ct", tags: ["swamp", "production"] }),
  ];
}

/** Runs `body` with the lxc model on the demo cluster plus {@link containers} (and `extra`). */
export function withCt(
  options: EnvOptions & { extra?: SimGuest[] },
  body: (env: Env) => Promise<void>,
): Promise<void> {
  const { extra = [], ...rest } = options;
  return withEnv({
    guests: [...demoGuests(), ...containers(), ...extra],
    model: lxcModel,
    ...rest,
  }, body);
}

/** The requests of one method whose path ends with `suffix`. */
export function sent(env: Env, method: string, suffix: string) {
  return env.sim.requests.filter((q) =>
    q.method === method && q.path.endsWith(suffix)
  );
}
