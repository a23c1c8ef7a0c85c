/**
 * Bringing files onto a storage from a URL, for real: `POST
 * /nodes/{node}/storage/{storage}/download-url` fetches the URL (in the tests,
 * a loopback HTTP server), checks the checksum as PVE does and stores the
 * bytes, so `import-from` and the content list see them; `GET
 * /nodes/{node}/query-url-metadata` asks the server with a HEAD request.
 *
 * Sources: pve-storage src/PVE/API2/Storage/Status.pm download_url (the
 * storage and file-name checks, the `download` worker), src/PVE/Storage.pm
 * (normalize_content_filename, $ISO_EXT_RE_0, $VZTMPL_EXT_RE_1,
 * $UPLOAD_IMPORT_EXT_RE_1, decompressor_info); pve-common src/PVE/Tools.pm
 * download_file_from_url (its log lines, the checks of an existing file, the
 * checksum, the rename into place); pve-manager PVE/API2/Nodes.pm
 * query_url_metadata. Not simulated: proxies, `verify-certificates` (Deno's
 * fetch always verifies), decompression other than gz, and the image checks
 * (`file_size_info` of an untrusted image, `assert_iso_content`).
 *
 * @module
 */

import { createHash } from "node:crypto";
import type { Ctx, Route } from "./context.ts";
import { ApiError, paramError } from "./http.ts";
import type { SimFile } from "./node_types.ts";
import { contentDir, isFileStorage, type StorageState } from "./storage.ts";
import { TaskFailure, type TaskRecord } from "./tasks.ts";

type Content = "iso" | "vztmpl" | "import";

/** The extension each content type requires (Status.pm download_url). */
const EXTENSION: Record<Content, { re: RegExp; error: string }> = {
  iso: { re: /[^/]+\.(?:iso|img)$/i, error: "wrong file extension" },
  vztmpl: {
    re: /[^/]+\.(?:tar(?!\.)|tar\.(?:gz|xz|zst|bz2))$/i,
    error: "wrong file extension",
  },
  import: {
    re: /[a-zA-Z0-9\-.+=_]+\.(ova|qcow2|raw|vmdk)$/,
    error: "invalid filename or wrong extension",
  },
};

/** PVE::Storage::normalize_content_filename. */
export function normalizeFilename(name: string): string {
  return name.replace(/\n$/, "").replace(/^.*[/\\]/, "").replace(
    /[^a-zA-Z0-9_.-]/g,
    "_",
  );
}

/** A hex digest of `data`, as PVE's get_file_hash computes it. */
export function digest(algorithm: string, data: Uint8Array): string {
  return createHash(algorithm).update(data).digest("hex");
}

/** What is stored under `file` for `content`, if anything. */
function existing(
  store: StorageState,
  content: Content,
  file: string,
): { size: number; data?: Uint8Array } | undefined {
  if (content === "vztmpl") {
    const t = store.templates.find((t) => t.file === file);
    return t && { size: t.size ?? t.data?.length ?? 0, data: t.data };
  }
  const f = store.files.find((f) => f.content === content && f.file === file);
  return f && { size: f.size ?? f.data?.length ?? 0, data: f.data };
}

function put(
  store: StorageState,
  content: Content,
  file: string,
  data: Uint8Array,
): void {
  const ctime = Math.floor(Date.now() / 1000);
  if (content === "vztmpl") {
    store.templates = store.templates.filter((t) => t.file !== file);
    store.templates.push({ file, size: data.length, data, ctime });
    return;
  }
  store.files = store.files.filter((f) =>
    !(f.content === content && f.file === file)
  );
  const entry: SimFile = { content, file, size: data.length, data, ctime };
  store.files.push(entry);
}

/** wget's failure as run_command reports it (errmsg "download failed"). */
function wgetFailed(tmp: string, url: string, code: number): TaskFailure {
  return new TaskFailure(
    `download failed: command 'wget --progress=dot:giga -O ${tmp} ${url}' failed: exit code ${code}`,
  );
}

async function fetchBytes(url: string, tmp: string): Promise<Uint8Array> {
  let response: Response;
  try {
    response = await fetch(url);
  } catch {
    throw wgetFailed(tmp, url, 4); // wget: network failure
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw wgetFailed(tmp, url, 8); // wget: server issued an error response
  }
  return new Uint8Array(await response.arrayBuffer());
}

async function gunzip(data: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([data as BlobPart]).stream().pipeThrough(
    new DecompressionStream("gzip"),
  );
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** The `download` worker: download_file_from_url with download_url's options. */
async function downloadWorker(
  task: TaskRecord,
  store: StorageState,
  p: {
    url: string;
    content: Content;
    file: string;
    algorithm?: string;
    checksum?: string;
    compression?: string;
  },
): Promise<void> {
  const log = (line: string) => task.log.push(line);
  const dest = `${contentDir(store, p.content)}/${p.file}`;
  if (p.compression && p.content !== "iso") {
    throw new TaskFailure(`decompression not supported for ${p.content}`);
  }
  log(`downloading ${p.url} to ${dest}`);
  const before = existing(store, p.content, p.file);
  if (before) {
    if (!p.algorithm || !p.checksum) {
      throw new TaskFailure(`refusing to override existing file '${dest}'`);
    }
    const got = digest(p.algorithm, before.data ?? new Uint8Array());
    if (got === p.checksum.toLowerCase()) {
      log(
        "calculating checksum of existing file...OK, got correct file already, no need to download",
      );
      return;
    }
    log("calculating checksum of existing file...");
    throw new TaskFailure(
      `checksum mismatch: got '${got}' != expect '${p.checksum}', aborting`,
    );
  }
  const tmp = `${dest}.tmp_dwnl.${task.pid}`;
  let data = await fetchBytes(p.url, tmp);
  if (p.algorithm && p.checksum) {
    const got = digest(p.algorithm, data);
    if (got !== p.checksum.toLowerCase()) {
      log("calculating checksum...");
      throw new TaskFailure(
        `checksum mismatch: got '${got}' != expect '${p.checksum}'`,
      );
    }
    log("calculating checksum...OK, checksum verified");
  }
  if (p.compression) {
    if (p.compression !== "gz") {
      throw new TaskFailure(
        `simulator: decompression of ${p.compression} is not simulated`,
      );
    }
    log(`decompressing ${tmp} to ${dest}.tmp_dcom.${task.pid}`);
    data = await gunzip(data);
  }
  if (task.truncateTo !== undefined) data = data.slice(0, task.truncateTo);
  put(store, p.content, p.file, data);
  log(`download of '${p.url}' to '${dest}' finished`);
}

function startDownload(ctx: Ctx): string {
  const { resources, tasks } = ctx.core;
  const node = ctx.params.node as string;
  const id = ctx.params.storage as string;
  const store = resources.enabled(node, id);
  if (!isFileStorage(store)) {
    throw new ApiError(
      500,
      `can't upload to storage type '${store.type}', not a file based storage!`,
    );
  }
  const content = ctx.params.content as Content;
  if (!store.content.includes(content)) {
    throw new ApiError(
      500,
      `storage '${id}' is not configured for content-type '${content}'`,
    );
  }
  const file = normalizeFilename(ctx.params.filename as string);
  const rule = EXTENSION[content];
  if (!rule.re.test(file)) throw paramError({ filename: rule.error });
  resources.online(store); // activate_storage
  const params = {
    url: ctx.params.url as string,
    content,
    file,
    algorithm: ctx.params["checksum-algorithm"] as string | undefined,
    checksum: ctx.params.checksum as string | undefined,
    compression: ctx.params.compression as string | undefined,
  };
  const task: TaskRecord = tasks.start({
    node,
    type: "download",
    id: file,
    user: ctx.user.tokenId,
    run: () => downloadWorker(task, store, params),
  });
  return task.upid;
}

/** The HEAD request of query_url_metadata, and what it makes of the answer. */
async function urlMetadata(url: string): Promise<Record<string, unknown>> {
  let response: Response;
  try {
    response = await fetch(url, { method: "HEAD" });
  } catch (err) {
    const host = URL.canParse(url) ? new URL(url).host : url;
    throw new ApiError(
      500,
      `invalid server response: '500 Can't connect to ${host} (${
        (err as Error).message.split(":")[0]
      })'`,
    );
  }
  await response.body?.cancel();
  if (response.status !== 200) {
    throw new ApiError(
      500,
      `invalid server response: '${response.status} ${response.statusText}'`,
    );
  }
  const out: Record<string, unknown> = {};
  const size = Number(response.headers.get("content-length") ?? 0);
  const disposition = response.headers.get("content-disposition") ?? "";
  const named = /filename="([^"]*)"/.exec(disposition) ??
    /filename=([^;]*)/.exec(disposition) ??
    /^[^?]+\/([^?/]*)(?:\?.*)?$/.exec(url);
  if (named?.[1]) out.filename = named[1];
  if (size) out.size = size;
  const type = response.headers.get("content-type");
  if (type) out.mimetype = type.replace(/;.*$/, "");
  return out;
}

/** The download routes. */
export const downloadRoutes: Route[] = [
  {
    method: "POST",
    path: "/nodes/{node}/storage/{storage}/download-url",
    params: {
      url: { type: "string", pattern: /^https?:\/\/.*$/ },
      content: { type: "string", enum: ["iso", "vztmpl", "import"] },
      filename: { type: "string", maxLength: 255 },
      checksum: { type: "string", optional: true },
      "checksum-algorithm": {
        type: "string",
        optional: true,
        enum: ["md5", "sha1", "sha224", "sha256", "sha384", "sha512"],
      },
      compression: {
        type: "string",
        optional: true,
        enum: ["gz", "lzo", "zst", "bz2"],
      },
      "verify-certificates": { type: "boolean", optional: true },
    },
    handler: startDownload,
  },
  {
    method: "GET",
    path: "/nodes/{node}/query-url-metadata",
    params: {
      url: { type: "string", pattern: /^https?:\/\/.*$/ },
      "verify-certificates": { type: "boolean", optional: true },
    },
    handler: (ctx) => urlMetadata(ctx.params.url as string),
  },
];
