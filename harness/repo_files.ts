/**
 * A swamp repository's files, read into the harness's terms: a model definition and a
 * definition's stored data. Layouts read from swamp-club/swamp:
 *
 * - a definition is `models/<normalised type>/<name>.yaml`
 *   (`YamlDefinitionRepository` in `src/infrastructure/persistence/yaml_definition_repository.ts`;
 *   a name that is not filename-safe is stored as `<id>.yaml` instead), the YAML of
 *   `Definition.toData()` (`src/domain/definitions/definition.ts`): `type`, `typeVersion`, `id`,
 *   `name`, `version`, `tags`, `globalArguments`, `methods` (`<method>: {arguments}`), then
 *   `inputs`, `checks`, `reports`, `resources` when set. A `typeVersion` YAML reads as a number
 *   counts as none;
 * - a definition's data is `.swamp/data/<normalised type>/<definition id>/<data name>/`
 *   (`FileSystemUnifiedDataRepository` in `src/infrastructure/persistence/
 *   unified_data_repository.ts`, default filesystem datastore `<repo>/.swamp/`): a folder per
 *   version, `<n>/raw` (the content: a resource's JSON) and `<n>/metadata.yaml` (`Data.toData()`,
 *   `src/domain/data/data.ts`, checked against `DataMetadataSchema` of `data_metadata.ts`), and a
 *   text file `latest` holding the latest version's number (without it, the highest version).
 *   A tombstone is a version whose metadata says `lifecycle: deleted`.
 *
 * The harness keeps a name's last version as its latest, so a `latest` naming another version is
 * refused rather than misread.
 *
 * @module
 */

import { join } from "node:path";
import { parse } from "npm:yaml@2";
import { z } from "npm:zod@4";
import type { StoredVersion } from "./data_store.ts";
import { normalizeType } from "./model_type.ts";
import type { Definition } from "./types.ts";

/** A definition read from its file: the harness's {@link Definition} and the type it names. */
export interface DefinitionFile extends Definition {
  /** The model type the file names (`type`), when it does. */
  type?: string;
  id: string;
  typeVersion: string | null;
}

/** Where swamp keeps the definition `name` of model type `type`, relative to the repository. */
export function definitionPath(type: string, name: string): string {
  return join("models", normalizeType(type), `${name}.yaml`);
}

/** Where swamp keeps the data of definition `definitionId` (type `type`), relative to the repository. */
export function dataDirectory(type: string, definitionId: string): string {
  return join(".swamp", "data", normalizeType(type), definitionId);
}

const DefinitionYaml = z.object({
  type: z.string().optional(),
  typeVersion: z.unknown().optional(),
  id: z.uuid(),
  name: z.string().min(1),
  version: z.number().int().positive(),
  tags: z.record(z.string(), z.string()).default({}),
  globalArguments: z.record(z.string(), z.unknown()).default({}),
  methods: z.record(
    z.string(),
    z.object({ arguments: z.record(z.string(), z.unknown()).optional() }),
  ).default({}),
  checks: z.object({
    require: z.array(z.string()).optional(),
    skip: z.array(z.string()).optional(),
  }).optional(),
});

/** Reads the text of a definition file. Throws when it is not one. */
export function parseDefinition(text: string): DefinitionFile {
  const data = DefinitionYaml.parse(parse(text));
  const methodArgs: Record<string, Record<string, unknown>> = {};
  for (const [method, { arguments: args }] of Object.entries(data.methods)) {
    if (args) methodArgs[method] = args;
  }
  return {
    ...(data.type === undefined ? {} : { type: data.type }),
    // `typeVersion` is preprocessed so that a number (a YAML float) counts as none.
    typeVersion: typeof data.typeVersion === "string" ? data.typeVersion : null,
    id: data.id,
    name: data.name,
    version: data.version,
    tags: data.tags,
    globalArgs: data.globalArguments,
    ...(Object.keys(methodArgs).length > 0 ? { methodArgs } : {}),
    ...(data.checks ? { checks: data.checks } : {}),
  };
}

const DURATION = /^\d+(mo|y|h|m|d|w)$/;

// DataMetadataSchema (data_metadata.ts), as far as the harness reads it.
const Metadata = z.object({
  id: z.uuid(),
  name: z.string().min(1).refine(
    (n) => !/\.\.|[/\\\0]/.test(n),
    "Data name must not contain '..', '/', '\\', or null bytes",
  ),
  version: z.number().int().positive(),
  contentType: z.string().min(1),
  lifetime: z.union([
    z.string().regex(DURATION),
    z.enum(["ephemeral", "infinite", "job", "workflow"]),
  ]),
  garbageCollection: z.union([
    z.number().int().positive(),
    z.string().regex(DURATION).refine((v) => parseInt(v, 10) > 0),
  ]),
  streaming: z.boolean().default(false),
  tags: z.record(z.string(), z.string()).refine(
    (tags) => "type" in tags,
    "tags must include 'type' key",
  ),
  ownerDefinition: z.object({
    ownerType: z.enum(["model-method", "workflow-step", "manual"]),
    ownerRef: z.string().min(1),
  }).loose(),
  createdAt: z.iso.datetime(),
  size: z.number().int().nonnegative().optional(),
  checksum: z.string().optional(),
  lifecycle: z.enum(["active", "deleted"]).optional(),
  renamedTo: z.string().min(1).optional(),
});

async function isDirectory(path: string): Promise<boolean> {
  return await Deno.stat(path).then((s) => s.isDirectory, () => false);
}

async function readLatest(dir: string): Promise<number | null> {
  try {
    const n = parseInt((await Deno.readTextFile(join(dir, "latest"))).trim());
    return Number.isNaN(n) ? null : n;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
}

/** The versions of one data name's folder, oldest first. */
async function readDataName(
  dir: string,
  name: string,
): Promise<StoredVersion[]> {
  const numbers: number[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const n = parseInt(entry.name, 10);
    if (
      entry.isDirectory && String(n) === entry.name && n > 0 &&
      await Deno.stat(join(dir, entry.name, "metadata.yaml")).then(
        (s) => s.isFile,
        () => false,
      )
    ) {
      numbers.push(n);
    }
  }
  numbers.sort((a, b) => a - b);
  const latest = await readLatest(dir);
  if (latest !== null && latest !== numbers.at(-1)) {
    throw new Error(
      `${dir}: latest is ${latest}, not the highest version ${numbers.at(-1)}`,
    );
  }
  const versions: StoredVersion[] = [];
  for (const n of numbers) {
    const at = join(dir, String(n));
    const meta = Metadata.parse(
      parse(await Deno.readTextFile(join(at, "metadata.yaml"))),
    );
    if (meta.name !== name || meta.version !== n) {
      throw new Error(
        `${at}/metadata.yaml: names ${meta.name} version ${meta.version}`,
      );
    }
    versions.push({
      name,
      version: n,
      dataId: meta.id,
      specName: meta.tags["specName"] ?? name,
      content: await Deno.readTextFile(join(at, "raw")),
      tags: meta.tags,
      lifetime: meta.lifetime,
      garbageCollection: meta.garbageCollection,
      lifecycle: meta.lifecycle ?? "active",
      writtenBy: "",
      ownerRef: meta.ownerDefinition.ownerRef,
      ownerType: meta.ownerDefinition.ownerType,
    });
  }
  return versions;
}

/**
 * Every version stored in a definition's data folder (`dataDirectory`'s), names in name order,
 * each name's versions oldest first: what `RepoOptions.data` takes. Throws on a version swamp
 * would not read.
 */
export async function readDataDirectory(dir: string): Promise<StoredVersion[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (await isDirectory(join(dir, entry.name))) names.push(entry.name);
  }
  const versions: StoredVersion[] = [];
  for (const name of names.sort()) {
    versions.push(...await readDataName(join(dir, name), name));
  }
  return versions;
}
