/**
 * PVE's own API schema (`apidata.json`, the data behind PVE's API viewer): the one input of the
 * generators of `pve_api_facts.json` and `src/pve/config_keys.rs`, and of the tests that prove those
 * committed files are what it gives. It is not part of the repository: it sits beside it in
 * `../shared/pve-api/`, or wherever `$PVE_APIDATA` says.
 *
 * @module
 */

/** Where apidata.json is: `$PVE_APIDATA`, else `<repo>/../shared/pve-api/apidata.json`. */
export function apidataPath(): string {
  return Deno.env.get("PVE_APIDATA") ??
    new URL("../../../shared/pve-api/apidata.json", import.meta.url).pathname;
}

/** The parsed schema tree; a missing file is an error that says what is needed and where. */
export async function readApidata<T = unknown>(): Promise<T> {
  const path = apidataPath();
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    throw new Error(
      `PVE's API schema is not at ${path}: these generators and their tests need apidata.json ` +
        "(PVE's api-viewer data as JSON) in ../shared/pve-api/ beside the project, or its path in " +
        "$PVE_APIDATA. The committed generated files stay the source of truth without it.",
    );
  }
  return JSON.parse(text) as T;
}
