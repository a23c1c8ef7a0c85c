/**
 * swamp's model type normalisation (swamp-club/swamp `src/domain/models/model_type.ts`):
 * lower-case; `::`, whitespace and dots become `/`; repeated and edge slashes dropped. Error
 * messages of the resource writer quote this form, and it is the type's folder under `models/`
 * and `.swamp/data/` (`ModelType.toDirectoryPath`).
 *
 * @module
 */

/** The normalised form of a model type, e.g. `@stateless/proxmox/qemu`. */
export function normalizeType(raw: string): string {
  return raw.trim().toLowerCase().replace(/::/g, "/").replace(/\s+/g, "/")
    .replace(/\./g, "/").replace(/\/+/g, "/").replace(/^\/|\/$/g, "");
}
