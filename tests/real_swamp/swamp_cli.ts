/**
 * The real swamp CLI, driven from tests: a fresh swamp repository with a package installed in
 * `extensions/models/`, and `swamp …` runs in it (`$SWAMP`, else a `swamp` on PATH).
 *
 * The harness in `harness/` stays the fast path; these tests keep it honest by running the same
 * package through swamp itself.
 *
 * @module
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The project root (this file is tests/real_swamp/swamp_cli.ts). */
export const PROJECT_ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** One `swamp …` run: its exit status, its output, and the JSON it printed (with `--json`). */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  // deno-lint-ignore no-explicit-any
  json: any;
}

let initialized: Promise<string> | undefined;

/**
 * The swamp CLI: `$SWAMP`, else a `swamp` on PATH. No registry offers swamp, so the layer needs one
 * given by hand; test.sh runs this layer only where one is present.
 */
export function swampBinary(): Promise<string> {
  const given = Deno.env.get("SWAMP");
  if (given) return Promise.resolve(given);
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    const candidate = join(dir || ".", "swamp");
    try {
      if (Deno.statSync(candidate).isFile) return Promise.resolve(candidate);
    } catch {
      // not in this PATH entry
    }
  }
  return Promise.reject(
    new Error("no swamp CLI on this machine: set SWAMP to a swamp executable"),
  );
}

/**
 * The swamp home the CLI uses when none is given: `$SWAMP_HOME`, else `home/` beside the
 * executable when there is one (a wrapper that keeps its own Deno and cache there), else none.
 */
export async function defaultSwampHome(): Promise<string | undefined> {
  const given = Deno.env.get("SWAMP_HOME");
  if (given) return given;
  const beside = join(await Deno.realPath(await swampBinary()), "..", "home");
  return await Deno.stat(beside).then((s) => s.isDirectory, () => false)
    ? beside
    : undefined;
}

/** A fresh swamp repository in a temporary directory. */
export class SwampCli {
  /** Environment added to every `swamp …` run (e.g. a registry's `SWAMP_HOME`, `SWAMP_CLUB_URL`). */
  env: Record<string, string> = {};

  private constructor(readonly dir: string, private readonly swamp: string) {}

  /** A fresh repository: a copy of one `swamp init` made once per process. */
  static async init(): Promise<SwampCli> {
    initialized ??= (async () => {
      const dir = await Deno.makeTempDir({ prefix: "real-swamp-template-" });
      const init = await new SwampCli(dir, await swampBinary()).run(
        "init",
        "--tool",
        "none",
      );
      if (init.code !== 0) throw new Error(`swamp init: ${init.stderr}`);
      globalThis.addEventListener("unload", () => {
        Deno.removeSync(dir, { recursive: true });
      });
      return dir;
    })();
    const template = await initialized;
    const dir = await Deno.makeTempDir({ prefix: "real-swamp-" });
    await copyTree(template, dir);
    return new SwampCli(dir, await swampBinary());
  }

  /** Runs `swamp <args…>` in the repository; `--json` output is parsed when it is JSON. */
  async run(...args: string[]): Promise<CliRun> {
    const out = await new Deno.Command(this.swamp, {
      args: [...args, "--no-color"],
      cwd: this.dir,
      env: { NO_COLOR: "1", ...this.env },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(out.stdout);
    const stderr = new TextDecoder().decode(out.stderr);
    // With --json, swamp prints a result on stdout and an error object on stderr.
    return {
      code: out.code,
      stdout,
      stderr,
      json: parseJson(stdout) ?? parseJson(stderr),
    };
  }

  /** Like {@link run} with `--json`, throwing unless the exit status is `expect` (default 0). */
  async json(args: string[], expect = 0): Promise<CliRun> {
    const r = await this.run(...args, "--json");
    if (r.code !== expect) {
      throw new Error(
        `swamp ${
          args.join(" ")
        }: exit ${r.code} (expected ${expect})\n${r.stdout}\n${r.stderr}`,
      );
    }
    return r;
  }

  /**
   * Installs a package (a folder holding manifest.yaml, its model files, and `reports/`,
   * `workflows/` and `skills/` folders) as this repository's local extension, replacing whatever
   * package was installed before.
   */
  async install(packageDir: string): Promise<void> {
    const at = (...path: string[]) => join(this.dir, ...path);
    // Where swamp looks for each kind with the manifest's default `paths.base` (typedDir): reports
    // in extensions/reports/, workflows in extensions/workflows/ (or workflows/), skills in an
    // enrolled tool's skill folder (.claude/skills/ when the repository names no tool).
    const folders: [string, string][] = [
      ["reports", at("extensions", "reports")],
      ["workflows", at("extensions", "workflows")],
      ["skills", at(".claude", "skills")],
    ];
    const models = at("extensions", "models");
    for (const dir of [models, ...folders.map(([, to]) => to)]) {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
    await copyTree(packageDir, models);
    for (const [from, to] of folders) {
      const shipped = join(packageDir, from);
      if (await Deno.stat(shipped).then((s) => s.isDirectory, () => false)) {
        await copyTree(shipped, to);
      }
    }
  }

  /** Writes a file (a model definition, a workflow) relative to the repository. */
  async write(path: string, text: string): Promise<void> {
    const full = join(this.dir, path);
    await Deno.mkdir(join(full, ".."), { recursive: true });
    await Deno.writeTextFile(full, text);
  }

  /** Reads a file relative to the repository. */
  read(path: string): Promise<string> {
    return Deno.readTextFile(join(this.dir, path));
  }

  /** The latest version of every record `predicate` (swamp's CEL) selects, by instance name. */
  async latest(
    predicate: string,
  ): Promise<Map<string, Record<string, unknown>>> {
    const r = await this.json(["data", "query", predicate]);
    const latest = new Map<string, Record<string, unknown>>();
    for (const row of r.json.results) {
      if (row.isLatest) latest.set(row.name, row.content);
    }
    return latest;
  }

  /** Removes the repository. */
  async close(): Promise<void> {
    await Deno.remove(this.dir, { recursive: true }).catch(() => {});
  }
}

/** swamp prints several JSON documents one after another (one per section); parse each. */
// deno-lint-ignore no-explicit-any
export function documents(text: string): any[] {
  return text.split(/\n(?=\{\n)/).filter((t) => t.trim()).map((t) =>
    JSON.parse(t)
  );
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined; // not JSON (no --json, or a crash): the caller reads the text
  }
}

async function copyTree(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const entry of Deno.readDir(from)) {
    const src = join(from, entry.name);
    const dst = join(to, entry.name);
    if (entry.isDirectory) await copyTree(src, dst);
    else if (entry.isFile) await Deno.copyFile(src, dst);
  }
}

/** `--global-arg` flags for a definition reaching the simulator over the api transport. */
export function apiGlobalArgs(
  name: string,
  url: string,
  token: { id: string; secret: string },
  extra: Record<string, string | number> = {},
): string[] {
  const args: Record<string, string | number> = {
    name,
    "transport.kind": "api",
    "transport.node": "pve1",
    "transport.apiUrl": url,
    "transport.tokenId": token.id,
    "transport.tokenSecret": token.secret,
    pollIntervalSec: 1,
    ...extra,
  };
  return Object.entries(args).flatMap((
    [k, v],
  ) => ["--global-arg", `${k}=${v}`]);
}
