/**
 * The size of swamp's push archive of a package, as the real swamp CLI builds it:
 * `swamp extension quality <manifest> --json` packages the extension (bundles of every model, the
 * additional files and the binaries) and reports `archiveSize`.
 *
 * @module
 */
import { SwampCli } from "../real_swamp/swamp_cli.ts";

/** Bytes of the archive `swamp extension push` would upload for the package in `dir`. */
export async function pushArchiveBytes(dir: string): Promise<number> {
  const cli = await SwampCli.init();
  try {
    await cli.install(dir);
    const r = await cli.run(
      "extension",
      "quality",
      "extensions/models/manifest.yaml",
      "--json",
    );
    const size = (JSON.parse(r.stdout) as { archiveSize?: unknown })
      .archiveSize;
    if (typeof size !== "number") {
      throw new Error(
        `swamp extension quality reported no archiveSize (exit ${r.code}): ${
          r.stderr.slice(0, 300)
        }`,
      );
    }
    return size;
  } finally {
    await cli.close();
  }
}
