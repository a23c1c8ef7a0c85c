/**
 * downloadUrl end to end, over both transports: the simulator really fetches the URL from a loopback
 * HTTP server, checks the checksum as PVE's download_file_from_url does and stores the bytes; the
 * method succeeds only when the storage's content list shows the volume with the URL's size (and
 * PVE's checksum line was logged), and refuses up front what PVE would refuse or rename.
 */
import assert from "node:assert/strict";
import { model as lxcModel } from "../../js/proxmox_lxc.ts";
import type { SimStorage } from "../../simulator/node_types.ts";
import { demoGuests } from "../../simulator/demo_cluster.ts";
import { type Env, withEnv, written } from "./env.ts";
import {
  DOWNLOAD_STORAGES,
  hexDigest,
  imageBytes,
  type ImageServer,
  startImageServer,
} from "../../simulator/image_server.ts";

const IMAGE = imageBytes(300_000);
const TEMPLATE = imageBytes(50_000, 3);
const ISO = imageBytes(80_000, 5);

const TRANSPORTS = ["api", "ssh"] as const;

async function gzip(data: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([data as BlobPart]).stream().pipeThrough(
    new CompressionStream("gzip"),
  );
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

async function withImages(
  via: "api" | "ssh",
  body: (env: Env, images: ImageServer) => Promise<void>,
  options: { lxc?: boolean; storages?: SimStorage[] } = {},
): Promise<void> {
  const images = startImageServer({
    "/cloud.qcow2": IMAGE,
    "/ct.tar.zst": TEMPLATE,
    "/boot.iso.gz": await gzip(ISO),
  });
  try {
    await withEnv({
      via,
      guests: demoGuests(),
      model: options.lxc ? lxcModel : undefined,
      sim: { storages: options.storages ?? DOWNLOAD_STORAGES },
    }, (env) => body(env, images));
  } finally {
    await images.close();
  }
}

const importArgs = (
  images: ImageServer,
  extra: Record<string, unknown> = {},
) => ({
  storage: "local",
  content: "import",
  url: images.url("/cloud.qcow2"),
  filename: "cloud.qcow2",
  ...extra,
});

const posts = (env: Env) =>
  env.sim.requests.filter((q) =>
    q.method === "POST" && q.path.endsWith("/download-url")
  );

const stored = (env: Env, content: string, file: string) =>
  env.sim.storage("pve1", "local")?.files.find((f) =>
    f.content === content && f.file === file
  );

for (const via of TRANSPORTS) {
  Deno.test(`downloadUrl (${via}): an import image with a sha256 is downloaded, checked by PVE and recorded`, async () => {
    await withImages(via, async (env, images) => {
      const sha = hexDigest("sha256", IMAGE);
      const r = await env.run(
        "downloadUrl",
        importArgs(images, { checksum: sha, checksumAlgorithm: "sha256" }),
      );
      assert.equal(r.status, "succeeded", r.error);
      const rec = written(r, "volume-local-cloud.qcow2");
      assert.equal(rec.volid, "local:import/cloud.qcow2");
      assert.equal(rec.present, true);
      assert.equal(rec.size, IMAGE.length);
      assert.equal(rec.urlSize, IMAGE.length);
      assert.equal(rec.format, "qcow2");
      assert.equal(rec.downloaded, true);
      assert.equal(rec.checksumVerified, true);
      assert.match(String(rec.lastTask), /:download:cloud\.qcow2:/);
      assert.deepEqual(stored(env, "import", "cloud.qcow2")?.data, IMAGE);
      assert.ok(images.served.includes("GET /cloud.qcow2"), "PVE fetched it");
      const task = env.sim.tasks().find((t) => t.type === "download");
      assert.ok(
        task?.log.includes("calculating checksum...OK, checksum verified"),
        JSON.stringify(task?.log),
      );
    });
  });

  Deno.test(`downloadUrl (${via}): a checksum mismatch fails with PVE's words and stores nothing`, async () => {
    await withImages(via, async (env, images) => {
      const wrong = hexDigest("sha256", TEMPLATE);
      const r = await env.run(
        "downloadUrl",
        importArgs(images, { checksum: wrong, checksumAlgorithm: "sha256" }),
      );
      assert.equal(r.status, "failed");
      assert.match(
        r.error ?? "",
        new RegExp(
          `checksum mismatch: got '${
            hexDigest("sha256", IMAGE)
          }' != expect '${wrong}'`,
        ),
      );
      assert.equal(stored(env, "import", "cloud.qcow2"), undefined);
    });
  });

  Deno.test(`downloadUrl (${via}): a storage that does not take the content type is refused before anything is sent`, async () => {
    await withImages(via, async (env, images) => {
      const r = await env.run(
        "downloadUrl",
        importArgs(images, { storage: "local-lvm" }),
      );
      assert.equal(r.status, "failed");
      assert.match(
        r.error ?? "",
        /^cannot download to local-lvm:import\/cloud\.qcow2 on node pve1: storage local-lvm does not allow content import \(its content: images, rootdir\); nothing was downloaded$/,
      );
      assert.equal(posts(env).length, 0);
      assert.equal(r.written.length, 0);
    });
  });
}

Deno.test("downloadUrl (lxc): a container template lands in the vztmpl content", async () => {
  await withImages("api", async (env, images) => {
    const r = await env.run("downloadUrl", {
      storage: "local",
      content: "vztmpl",
      url: images.url("/ct.tar.zst"),
      filename: "ct.tar.zst",
      checksum: hexDigest("md5", TEMPLATE),
      checksumAlgorithm: "md5",
    });
    assert.equal(r.status, "succeeded", r.error);
    const rec = written(r, "volume-local-ct.tar.zst");
    assert.equal(rec.volid, "local:vztmpl/ct.tar.zst");
    assert.equal(rec.size, TEMPLATE.length);
    const listed = env.sim.storage("pve1", "local")?.templates.map((t) =>
      t.file
    );
    assert.ok(listed?.includes("ct.tar.zst"), JSON.stringify(listed));
  }, { lxc: true });
});

Deno.test("downloadUrl: a gz-compressed ISO is stored decompressed (its size is not the URL's)", async () => {
  await withImages("api", async (env, images) => {
    const r = await env.run("downloadUrl", {
      storage: "local",
      content: "iso",
      url: images.url("/boot.iso.gz"),
      filename: "boot.iso",
      compression: "gz",
    });
    assert.equal(r.status, "succeeded", r.error);
    assert.equal(written(r, "volume-local-boot.iso").size, ISO.length);
    assert.deepEqual(stored(env, "iso", "boot.iso")?.data, ISO);
  });
});

Deno.test("downloadUrl: a volume already there with the URL's size is done without a download", async () => {
  await withImages("api", async (env, images) => {
    const first = await env.run("downloadUrl", importArgs(images));
    assert.equal(first.status, "succeeded", first.error);
    const again = await env.run("downloadUrl", importArgs(images));
    assert.equal(again.status, "succeeded", again.error);
    assert.equal(written(again, "volume-local-cloud.qcow2").downloaded, false);
    assert.equal(posts(env).length, 1, "the second run sent no download");
    const checked = await env.run(
      "downloadUrl",
      importArgs(images, {
        checksum: hexDigest("sha512", IMAGE),
        checksumAlgorithm: "sha512",
      }),
    );
    assert.equal(checked.status, "succeeded", checked.error);
    const rec = written(checked, "volume-local-cloud.qcow2");
    assert.equal(rec.checksumVerified, true, "PVE checked the existing file");
    assert.equal(rec.downloaded, false);
  });
});

Deno.test("downloadUrl: a volume already there with another size fails naming it, nothing sent", async () => {
  const storages: SimStorage[] = [{
    ...DOWNLOAD_STORAGES[0],
    files: [{ content: "import", file: "cloud.qcow2", data: imageBytes(10) }],
  }];
  await withImages("api", async (env, images) => {
    const r = await env.run("downloadUrl", importArgs(images));
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /^volume local:import\/cloud\.qcow2 already exists on node pve1 with 10 bytes, and the URL's file has 300000 bytes; nothing was downloaded/,
    );
    assert.equal(posts(env).length, 0);
    assert.equal(written(r, "volume-local-cloud.qcow2").size, 10);
  }, { storages });
});

Deno.test("downloadUrl: a task that ends OK without the volume fails, recording it absent", async () => {
  await withImages("api", async (env, images) => {
    env.sim.nextTask({ noEffect: true });
    const r = await env.run("downloadUrl", importArgs(images));
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /ended OK, but local:import\/cloud\.qcow2 is not in the import content of storage local/,
    );
    assert.equal(written(r, "volume-local-cloud.qcow2").present, false);
  });
});

Deno.test("downloadUrl: a short download that ends OK fails naming both sizes", async () => {
  await withImages("api", async (env, images) => {
    env.sim.nextTask({ truncateTo: 1000 });
    const r = await env.run("downloadUrl", importArgs(images));
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /has 1000 bytes where the URL's file has 300000 \(a short or altered download\)/,
    );
    assert.equal(written(r, "volume-local-cloud.qcow2").size, 1000);
  });
});

Deno.test("downloadUrl: a URL the node cannot fetch fails before the download, in PVE's words", async () => {
  await withImages("api", async (env, images) => {
    const r = await env.run("downloadUrl", {
      ...importArgs(images),
      url: images.url("/nope.qcow2"),
    });
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /could not query the URL .*invalid server response: '404 Not Found'/,
    );
    assert.equal(posts(env).length, 0);
  });
});

Deno.test("downloadUrl: a missing privilege is PVE's 403, with what the download needs", async () => {
  await withImages("api", async (env, images) => {
    env.sim.fault({
      pathRegex: "/query-url-metadata$",
      kind: "status",
      status: 403,
      message: "Permission check failed (/nodes/pve1, Sys.AccessNetwork)",
    });
    const r = await env.run("downloadUrl", importArgs(images));
    assert.equal(r.status, "failed");
    assert.match(
      r.error ?? "",
      /PVE refused it: Permission check failed \(\/nodes\/pve1, Sys\.AccessNetwork\)/,
    );
    assert.match(
      r.error ?? "",
      /Datastore\.AllocateTemplate on \/storage\/local/,
    );
    assert.equal(posts(env).length, 0);
  });
});

Deno.test("downloadUrl: a file name PVE would rename is refused, naming what PVE would store", async () => {
  await withImages("api", async (env, images) => {
    const r = await env.run(
      "downloadUrl",
      importArgs(images, { filename: "my cloud.qcow2" }),
    );
    assert.equal(r.status, "failed");
    assert.match(r.error ?? "", /filename/);
    assert.equal(posts(env).length, 0);
  });
});
