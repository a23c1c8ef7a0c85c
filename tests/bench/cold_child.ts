/**
 * The cold-start child process: `empty` does nothing (Deno's own start-up floor); `import <url>`
 * imports a model module; `lookup <url> <apiUrl> <tokenId> <tokenSecret>` imports it and runs one
 * lookup of VM 100 with a minimal swamp-like context. Prints one JSON line; the parent times the
 * whole process. Imports nothing else, so only the model's own module graph is measured.
 *
 * @module
 */

interface MethodLike {
  arguments: { parse(v: unknown): unknown };
  execute(args: unknown, ctx: unknown): Promise<unknown>;
}
interface ModelLike {
  globalArguments: { parse(v: unknown): Record<string, unknown> };
  methods: Record<string, MethodLike>;
}

const [mode, entry, apiUrl, tokenId, tokenSecret] = Deno.args;

if (mode === "import" || mode === "lookup") {
  const t0 = performance.now();
  const { model } = await import(entry) as { model: ModelLike };
  const importMs = performance.now() - t0;
  if (mode === "import") {
    console.log(JSON.stringify({ status: "succeeded", importMs }));
  } else {
    const t1 = performance.now();
    const globalArgs = model.globalArguments.parse({
      name: "cold",
      transport: { kind: "api", node: "pve1", apiUrl, tokenId, tokenSecret },
    });
    const lookup = model.methods.lookup;
    const args = lookup.arguments.parse({ ...globalArgs, vmid: 100 });
    const written: string[] = [];
    const quiet = () => {};
    const logger = {
      debug: quiet,
      info: quiet,
      warn: quiet,
      warning: quiet,
      error: quiet,
      trace: quiet,
      fatal: quiet,
    };
    let status = "succeeded";
    try {
      await lookup.execute(args, {
        globalArgs,
        logger,
        signal: new AbortController().signal,
        definition: { id: "cold", name: "cold", version: 1, tags: {} },
        methodName: "lookup",
        modelId: "cold",
        writeResource: (spec: string, instance: string) => {
          written.push(instance);
          return Promise.resolve({ name: instance, specName: spec });
        },
        readResource: () => Promise.resolve(null),
        // The package ships its files beside its manifest (the folder of the model entry).
        extensionFile: (p: string) => new URL(p, entry).pathname,
      });
    } catch (error) {
      status = `failed: ${(error as Error).message}`;
    }
    const lookupMs = performance.now() - t1;
    console.log(JSON.stringify({ status, importMs, lookupMs, written }));
  }
}
