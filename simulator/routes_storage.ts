/**
 * A node's storages and network: `GET /nodes/{node}/storage` (with the
 * `content`, `storage`, `enabled` filters), `…/storage/{storage}/status`,
 * `…/storage/{storage}/content` and `GET /nodes/{node}/network` (with `type`,
 * e.g. `any_bridge`). Serves both the qemu `nodeConfig` method and container
 * create (which storages take `rootdir`, which templates and bridges exist).
 *
 * Sources: pve-storage src/PVE/API2/Storage/Status.pm (index, read_status),
 * Content.pm (index), PVE/Storage.pm (storage_info, volume_list); pve-manager
 * PVE/API2/Network.pm (index). Storage permissions are not simulated (every
 * token may audit every storage).
 *
 * @module
 */

import type { Route } from "./context.ts";
import { paramError } from "./http.ts";
import { NODE_SPEC } from "./params.ts";
import {
  CONTENT_ENUM,
  contentList,
  networkEntries,
  offersContent,
  storageEntry,
} from "./storage.ts";

/** `type` values of the network index (pve-manager Network.pm). */
const NETWORK_TYPES = [
  "bridge",
  "bond",
  "eth",
  "alias",
  "vlan",
  "fabric",
  "OVSBridge",
  "OVSBond",
  "OVSPort",
  "OVSIntPort",
  "vnet",
  "any_bridge",
  "any_local_bridge",
  "include_sdn",
];

/** pve-storage-content-list: comma-separated known content types. */
const CONTENT_LIST = new RegExp(
  `^(${CONTENT_ENUM.join("|")})([,;\\s]+(${CONTENT_ENUM.join("|")}))*$`,
);

/** The storage and network routes. */
export const storageRoutes: Route[] = [
  {
    method: "GET",
    path: "/nodes/{node}/storage",
    params: {
      storage: {
        type: "string",
        optional: true,
        pattern: /^[a-z][a-z0-9\-_.]*[a-z0-9]$/i,
      },
      content: { type: "string", optional: true, pattern: CONTENT_LIST },
      enabled: { type: "boolean", optional: true },
      target: { ...NODE_SPEC, optional: true },
      format: { type: "boolean", optional: true },
    },
    handler: (ctx) => {
      const { resources } = ctx.core;
      const node = ctx.params.node as string;
      const content = ctx.params.content as string | undefined;
      const only = ctx.params.storage as string | undefined;
      const target = ctx.params.target as string | undefined;
      // storage_info: with a content filter, only enabled storages offering it.
      const listed = resources.listed(node).filter(({ store }) =>
        content === undefined ||
        (store !== undefined && !store.disabled &&
          offersContent(store, content))
      );
      if (only !== undefined && !listed.some((s) => s.id === only)) {
        throw paramError({ storage: "No such storage." });
      }
      return listed
        .filter(({ id }) => only === undefined || id === only)
        .filter(({ store }) =>
          !(ctx.params.enabled === true && store?.disabled)
        )
        .filter(({ id, store }) =>
          // `target` (the clone dialog): shared storages reachable from both nodes.
          target === undefined || target === node ||
          (store?.shared === true && resources.get(target, id) !== undefined)
        )
        .map(({ id, store }) => storageEntry(resources, node, id, store));
    },
  },
  {
    method: "GET",
    path: "/nodes/{node}/storage/{storage}/status",
    handler: (ctx) => {
      const { resources } = ctx.core;
      const node = ctx.params.node as string;
      const id = ctx.params.storage as string;
      if (!resources.exists(id)) {
        throw paramError({ storage: "No such storage." });
      }
      const entry = storageEntry(resources, node, id, resources.get(node, id));
      delete entry.storage;
      delete entry.used_fraction;
      return entry;
    },
  },
  {
    method: "GET",
    path: "/nodes/{node}/storage/{storage}/content",
    params: {
      content: { type: "string", optional: true, enum: CONTENT_ENUM },
      vmid: {
        type: "integer",
        optional: true,
        minimum: 100,
        maximum: 999999999,
      },
    },
    handler: (ctx) => {
      const { resources } = ctx.core;
      const node = ctx.params.node as string;
      const id = ctx.params.storage as string;
      // volume_list → activate_storage: 500 when absent, disabled, elsewhere or offline.
      const store = resources.usable(node, id);
      return contentList(
        resources,
        node,
        store,
        ctx.params.content as string | undefined,
        ctx.params.vmid as number | undefined,
      );
    },
  },
  {
    method: "GET",
    path: "/nodes/{node}/network",
    params: {
      type: { type: "string", optional: true, enum: NETWORK_TYPES },
    },
    handler: (ctx) =>
      networkEntries(
        ctx.core.resources,
        ctx.params.node as string,
        ctx.params.type as string | undefined,
      ),
  },
];
