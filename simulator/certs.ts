/**
 * A throwaway CA and a 127.0.0.1 server certificate it signed, like PVE's
 * pve-root-ca + node certificate: clients trust the CA (`caCerts`), never the
 * leaf itself. Made with the host's `openssl`.
 *
 * @module
 */

/** PEM strings: `caCert` for clients, `cert` + `key` for the simulator's `tls` option. */
export interface TestCerts {
  caCert: string;
  cert: string;
  key: string;
}

async function openssl(args: string[], cwd: string): Promise<void> {
  const out = await new Deno.Command("openssl", {
    args,
    cwd,
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(
      `openssl ${args[0]} failed: ${new TextDecoder().decode(out.stderr)}`,
    );
  }
}

/** Creates the CA and the server certificate (EC P-256, valid 1 day) in a temp dir it removes again. */
export async function makeTestCerts(): Promise<TestCerts> {
  const dir = await Deno.makeTempDir({ prefix: "sim-certs-" });
  try {
    const ec = [
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
    ];
    await openssl([
      "req",
      "-x509",
      ...ec,
      "-keyout",
      "ca.key",
      "-out",
      "ca.pem",
      "-days",
      "1",
      "-subj",
      "/CN=sim-ca",
    ], dir);
    await openssl([
      "req",
      ...ec,
      "-keyout",
      "srv.key",
      "-out",
      "srv.csr",
      "-subj",
      "/CN=127.0.0.1",
    ], dir);
    // A leaf (not CA) certificate with an IP SAN: what rustls requires of a server.
    await Deno.writeTextFile(
      `${dir}/ext.cnf`,
      "basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
    );
    await openssl(
      [
        "x509",
        "-req",
        "-in",
        "srv.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "srv.pem",
        "-days",
        "1",
        "-extfile",
        "ext.cnf",
      ],
      dir,
    );
    return {
      caCert: await Deno.readTextFile(`${dir}/ca.pem`),
      cert: await Deno.readTextFile(`${dir}/srv.pem`),
      key: await Deno.readTextFile(`${dir}/srv.key`),
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
