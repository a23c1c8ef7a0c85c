/**
 * The shape of one storage as the simulator keeps it: its own file, so that what reads a
 * storage's contents (backups.ts) and what serves its listing (storage.ts) both import it without
 * importing each other.
 *
 * @module
 */

import type { SimFile, SimTemplate, StorageContent } from "./node_types.ts";

/** A storage as it lives on one node (or, when shared, on all its nodes). Mutable by tests. */
export interface StorageState {
  storage: string;
  type: string;
  content: StorageContent[];
  /** Nodes it is available on; undefined = every node. */
  nodes?: string[];
  shared: boolean;
  disabled: boolean;
  active: boolean;
  total: number;
  /** Bytes used besides guest volumes and templates. */
  used: number;
  templates: SimTemplate[];
  /** ISO images and importable disk images (downloadUrl puts them here). */
  files: SimFile[];
}
