/**
 * The machine a benchmark ran on: CPU count, CPU model, OS and Deno version.
 *
 * @module
 */

/** One line: `nproc 2 · CPU AMD EPYC · linux x86_64 · deno 2.9.6`. */
export async function machineInfo(): Promise<string> {
  let cpu = "unknown CPU";
  try {
    const text = await Deno.readTextFile("/proc/cpuinfo");
    cpu = /^model name\s*:\s*(.+)$/m.exec(text)?.[1]?.trim() ?? cpu;
  } catch {
    // not Linux: keep "unknown CPU"
  }
  let nproc = String(navigator.hardwareConcurrency);
  try {
    const out = await new Deno.Command("nproc", { stdout: "piped" }).output();
    if (out.success) nproc = new TextDecoder().decode(out.stdout).trim();
  } catch {
    // no nproc binary: keep the runtime's count
  }
  return [
    `nproc ${nproc}`,
    `CPU ${cpu}`,
    `${Deno.build.os} ${Deno.build.arch}`,
    `deno ${Deno.version.deno}`,
  ].join(" · ");
}
