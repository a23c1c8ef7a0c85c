/**
 * A fake swamp extension registry, in process: just the endpoints `swamp extension push` and
 * `swamp extension pull` call (swamp's `ExtensionApiClient`, `SwampClubClient.whoami`), with the
 * uploaded archives kept in memory. swamp reaches it through `SWAMP_CLUB_URL`; {@link
 * RegistryHome} is a swamp home whose credentials point at it.
 *
 * - `GET /api/whoami` — the key's owner, a member of the one collective the registry serves.
 * - `GET /api/v1/extensions/<name>[/latest]` — what was published (404 before the first push).
 * - `POST /api/v1/extensions/push` → an upload URL; `PUT` the archive there;
 *   `POST /api/v1/extensions/confirm` publishes it.
 * - `GET /api/v1/extensions/<name>@<version>/download` → 302 to the archive;
 *   `GET …/checksum` → its SHA-256 as lowercase hex (what pull's `verifyChecksum` compares).
 *
 * Every request is logged (`requests`); anything else is answered 404 and logged too.
 *
 * @module
 */
import { join } from "node:path";
import {
  type CliRun,
  defaultSwampHome,
  documents,
  SwampCli,
} from "./swamp_cli.ts";

/** One version stored by a confirmed push. */
export interface Published {
  name: string;
  version: string;
  /** The tar.gz swamp uploaded, byte for byte. */
  archive: Uint8Array;
  /** Its SHA-256, lowercase hex. */
  checksum: string;
  /** The metadata swamp sent with `confirm`. */
  metadata: Record<string, unknown>;
  publishedAt: string;
}

/** A running fake registry. */
export interface FakeRegistry {
  /** Base URL (`SWAMP_CLUB_URL`). */
  url: string;
  /** The API key the registry accepts. */
  apiKey: string;
  /** Published versions by `<name>@<version>`. */
  published: Map<string, Published>;
  /** `METHOD path status` of every request, in order. */
  requests: string[];
  close(): Promise<void>;
}

/** Starts a registry on 127.0.0.1 (random port) serving `collective`'s extensions to `apiKey`. */
export function startRegistry(
  options: { collective?: string; apiKey?: string } = {},
): FakeRegistry {
  const collective = options.collective ?? "stateless";
  const apiKey = options.apiKey ?? "swamp_fake_registry_key_0001";
  const published = new Map<string, Published>();
  const uploads = new Map<string, Uint8Array>();
  const pending = new Map<string, string>(); // "<name>@<version>" → upload id
  const requests: string[] = [];
  let base = "";
  let uploadCounter = 0;

  const versionsOf = (name: string) =>
    [...published.values()].filter((p) => p.name === name);
  const latestOf = (name: string) => versionsOf(name).at(-1);

  const handle = async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    const path = url.pathname;
    const authed = req.headers.get("x-api-key") === apiKey;

    if (req.method === "GET" && path === "/api/whoami") {
      if (!authed) return json({ authenticated: false }, 401);
      return json({
        authenticated: true,
        id: "user-1",
        username: collective,
        organizations: [
          { slug: collective, name: collective, role: "owner", personal: true },
        ],
      });
    }

    if (req.method === "PUT" && path.startsWith("/upload/")) {
      uploads.set(path.slice("/upload/".length), await bytes(req));
      return new Response(null, { status: 200 });
    }

    if (req.method === "GET" && path.startsWith("/archive/")) {
      const key = decodeURIComponent(path.slice("/archive/".length));
      const p = published.get(key);
      return p
        ? new Response(p.archive as BodyInit, {
          headers: { "content-type": "application/gzip" },
        })
        : json({ error: "no such archive" }, 404);
    }

    if (req.method === "POST" && path === "/api/v1/extensions/push") {
      if (!authed) return json({ error: "unauthenticated" }, 401);
      const meta = await req.json();
      if (published.has(`${meta.name}@${meta.version}`)) {
        return json({ error: `Version ${meta.version} exists` }, 409);
      }
      const id = `u${++uploadCounter}`;
      pending.set(`${meta.name}@${meta.version}`, id);
      return json({
        uploadUrl: `${base}/upload/${id}`,
        s3Key: `extensions/${meta.name}/${meta.version}.tar.gz`,
        extensionId: `ext-${meta.name}`,
      });
    }

    if (req.method === "POST" && path === "/api/v1/extensions/confirm") {
      if (!authed) return json({ error: "unauthenticated" }, 401);
      const meta = await req.json();
      const key = `${meta.name}@${meta.version}`;
      const archive = uploads.get(pending.get(key) ?? "");
      if (!archive) return json({ error: `no upload for ${key}` }, 422);
      published.set(key, {
        name: meta.name,
        version: meta.version,
        archive,
        checksum: await sha256Hex(archive),
        metadata: meta,
        publishedAt: new Date().toISOString(),
      });
      return json({
        extensionId: `ext-${meta.name}`,
        name: meta.name,
        version: meta.version,
      });
    }

    const prefix = "/api/v1/extensions/";
    if (req.method === "GET" && path.startsWith(prefix)) {
      // The name (and version) come percent-encoded as one segment: %40collective%2Fname%40version.
      const [encoded, action = ""] = path.slice(prefix.length).split("/");
      const ref = decodeURIComponent(encoded);
      const at = ref.indexOf("@", 1);
      const name = at < 0 ? ref : ref.slice(0, at);
      const version = at < 0 ? undefined : ref.slice(at + 1);
      if (version !== undefined) {
        const p = published.get(`${name}@${version}`);
        if (!p) return json({ error: "not found" }, 404);
        if (action === "download") {
          return new Response(null, {
            status: 302,
            headers: {
              location: `${base}/archive/${
                encodeURIComponent(`${name}@${version}`)
              }`,
            },
          });
        }
        if (action === "checksum") return json({ checksum: p.checksum });
      } else {
        const latest = latestOf(name);
        if (!latest) return json({ error: "not found" }, 404);
        if (action === "") return json(extensionInfo(latest));
        if (action === "latest") {
          const content = (latest.metadata.contentMetadata ?? {}) as Record<
            string,
            unknown
          >;
          return json({
            latestVersion: latest.version,
            latestVersionDetail: {
              version: latest.version,
              publishedAt: latest.publishedAt,
              channel: "stable",
              ...content,
            },
          });
        }
      }
    }

    return json(
      { error: `fake registry: no route ${req.method} ${path}` },
      404,
    );
  };

  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req) => {
      const res = await handle(req);
      requests.push(`${req.method} ${new URL(req.url).pathname} ${res.status}`);
      return res;
    },
  );
  base = `http://127.0.0.1:${server.addr.port}`;
  return {
    url: base,
    apiKey,
    published,
    requests,
    close: () => server.shutdown(),
  };
}

/**
 * A swamp home (`SWAMP_HOME`) in a temporary directory whose `config/auth.json` holds the fake
 * registry's key, and the environment that sends swamp there. The embedded deno and its cache are
 * links to the default home's (`$SWAMP_HOME` of the wrapper), so nothing is extracted or
 * downloaded again.
 */
export class RegistryHome {
  private constructor(
    readonly dir: string,
    readonly env: Record<string, string>,
  ) {}

  /**
   * Creates the home; `sharedHome`, when the CLI has one, may hold a `deno/` and `deno-cache/` of
   * its own (a wrapper's), linked so the fresh home does not fetch them again.
   */
  static async create(
    registry: FakeRegistry,
    sharedHome: string | undefined,
  ): Promise<RegistryHome> {
    const dir = await Deno.makeTempDir({ prefix: "real-swamp-home-" });
    for (const shared of sharedHome ? ["deno", "deno-cache"] : []) {
      const from = join(sharedHome!, shared);
      if (await Deno.stat(from).then(() => true, () => false)) {
        await Deno.symlink(from, join(dir, shared));
      }
    }
    await Deno.mkdir(join(dir, "config"));
    const auth = {
      serverUrl: registry.url,
      apiKey: registry.apiKey,
      apiKeyId: "fake-key-1",
      username: "stateless",
      collectives: ["stateless"],
    };
    await Deno.writeTextFile(
      join(dir, "config", "auth.json"),
      JSON.stringify(auth, null, 2) + "\n",
      { mode: 0o600 },
    );
    return new RegistryHome(dir, {
      SWAMP_HOME: dir,
      SWAMP_CLUB_URL: registry.url,
    });
  }

  async close(): Promise<void> {
    await Deno.remove(this.dir, { recursive: true }).catch(() => {});
  }
}

/**
 * A package published by the real swamp: a fresh repository with the package installed as a local
 * extension runs `swamp extension push <manifest> --yes` against a fake registry; fresh
 * repositories then pull it back with {@link PublishedPackage.pullInto}.
 */
export class PublishedPackage {
  private constructor(
    readonly registry: FakeRegistry,
    readonly home: RegistryHome,
    /** The JSON document `extension push` ended with (name, version, archiveSize, …). */
    // deno-lint-ignore no-explicit-any
    readonly pushed: any,
  ) {}

  /** Pushes `packageDir` (a folder holding manifest.yaml) to a new fake registry. */
  static async push(packageDir: string): Promise<PublishedPackage> {
    const registry = startRegistry();
    let home: RegistryHome | undefined;
    const author = await SwampCli.init();
    try {
      home = await RegistryHome.create(registry, await defaultSwampHome());
      author.env = home.env;
      await author.install(packageDir);
      const r = await author.run(
        "extension",
        "push",
        "extensions/models/manifest.yaml",
        "--yes",
        "--json",
      );
      if (r.code !== 0) {
        throw new Error(`swamp extension push: exit ${r.code}\n${r.stderr}`);
      }
      return new PublishedPackage(registry, home, documents(r.stdout).at(-1));
    } catch (e) {
      await home?.close();
      await registry.close();
      throw e;
    } finally {
      await author.close();
    }
  }

  /** The one version the push stored. */
  get version(): Published {
    const [only, ...more] = this.registry.published.values();
    if (!only || more.length) {
      throw new Error(`${this.registry.published.size} versions published`);
    }
    return only;
  }

  /**
   * `swamp extension pull <name> --json` into `cli`'s repository, which keeps this registry's
   * environment for the runs that follow. Throws unless it exits 0.
   */
  async pullInto(cli: SwampCli): Promise<CliRun> {
    cli.env = this.home.env;
    const r = await cli.run("extension", "pull", this.pushed.name, "--json");
    if (r.code !== 0) {
      throw new Error(`swamp extension pull: exit ${r.code}\n${r.stderr}`);
    }
    return r;
  }

  async close(): Promise<void> {
    await this.home.close();
    await this.registry.close();
  }
}

/** The entry names of a tar.gz (ustar, with pax `path` records), in archive order. */
export async function tarGzEntries(archive: Uint8Array): Promise<string[]> {
  const tar = new Uint8Array(
    await new Response(
      new Blob([archive as Uint8Array<ArrayBuffer>]).stream().pipeThrough(
        new DecompressionStream("gzip"),
      ),
    ).arrayBuffer(),
  );
  const text = (from: number, len: number) =>
    new TextDecoder().decode(tar.subarray(from, from + len)).replace(
      /\0.*$/s,
      "",
    );
  const names: string[] = [];
  let paxPath: string | undefined;
  for (let at = 0; at + 512 <= tar.length;) {
    if (tar.subarray(at, at + 512).every((b) => b === 0)) break;
    const size = parseInt(text(at + 124, 12).trim() || "0", 8);
    const type = String.fromCharCode(tar[at + 156]);
    const data = at + 512;
    if (type === "x") {
      paxPath = text(data, size).match(/^\d+ path=(.*)$/m)?.[1];
    } else if (type !== "g") {
      const prefix = text(at + 345, 155);
      const name = text(at, 100);
      names.push(paxPath ?? (prefix ? `${prefix}/${name}` : name));
      paxPath = undefined;
    }
    at = data + Math.ceil(size / 512) * 512;
  }
  return names;
}

function extensionInfo(p: Published) {
  const meta = p.metadata as {
    description?: string;
    repository?: string;
    platforms?: string[];
    labels?: string[];
    dependencies?: string[];
  };
  return {
    id: `ext-${p.name}`,
    name: p.name,
    namespace: p.name.split("/")[0].slice(1),
    description: meta.description ?? "",
    repository: meta.repository ?? null,
    homepageUrl: null,
    license: null,
    platforms: meta.platforms ?? [],
    labels: meta.labels ?? [],
    contentTypes: [],
    contentNames: [],
    latestVersion: p.version,
    author: { username: "stateless", displayName: "stateless" },
    createdAt: p.publishedAt,
    updatedAt: p.publishedAt,
    yankedAt: null,
    yankReason: null,
    deprecatedAt: null,
    deprecatedByUserId: null,
    deprecationReason: null,
    supersededBy: null,
    repositoryVerified: null,
    repositoryVerifiedAt: null,
    repositoryVerifiedUrl: null,
    pullCount: 0,
    score: null,
    latestRc: null,
    latestBeta: null,
    dependencies: meta.dependencies ?? [],
    isPrivate: false,
  };
}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json" },
  });
}

async function bytes(req: Request): Promise<Uint8Array> {
  return new Uint8Array(await req.arrayBuffer());
}

/** SHA-256 of `data` as lowercase hex (swamp's `computeChecksum`). */
export async function sha256Hex(data: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-256",
    data as Uint8Array<ArrayBuffer>,
  );
  return Array.from(
    new Uint8Array(digest),
    (b) => b.toString(16).padStart(2, "0"),
  ).join("");
}
