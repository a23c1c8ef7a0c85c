/**
 * The package's workflows through the harness: the end-to-end fixture (simulator, qemu-ga) with the
 * definition a workflow runs on named as the workflow's default `model` input says (`proxmox` for
 * the qemu model, `proxmox-ct` for the lxc model over ssh), and `swamp workflow run` of the
 * package's own workflow files (js/workflows/).
 *
 * @module
 */
import { model as qemuModel } from "../../js/proxmox_qemu.ts";
import { model as lxcModel } from "../../js/proxmox_lxc.ts";
import { SwampRepo } from "../../harness/swamp.ts";
import {
  PACKAGE_FILES,
  packageWorkflow,
} from "../../harness/project_package.ts";
import {
  runWorkflow,
  type WorkflowRunOptions,
  type WorkflowRunView,
} from "../../harness/workflow.ts";
import {
  assertNoSecret,
  type Env,
  type EnvOptions,
  startEnv,
} from "../e2e/env.ts";

/** A running fixture with the workflows' definition. */
export interface WorkflowEnv {
  env: Env;
  /** The definition the workflows run on (`proxmox` or `proxmox-ct`). */
  repo: SwampRepo;
  /** Runs the package's workflow `file` with `inputs` (a leak scan on the result). */
  run(
    file: string,
    inputs?: Record<string, unknown>,
    options?: Omit<WorkflowRunOptions, "inputs">,
  ): Promise<WorkflowRunView>;
  /** The latest record `name` of the definition. */
  record(name: string): Record<string, unknown> | undefined;
}

/** Runs `body` against a fresh fixture: the qemu model as `proxmox`, or with `lxc` the lxc model over ssh as `proxmox-ct`. */
export async function withWorkflows(
  options: EnvOptions & { lxc?: boolean },
  body: (w: WorkflowEnv) => Promise<void>,
): Promise<void> {
  const env = await startEnv({
    ...options,
    via: options.lxc ? "ssh" : options.via,
    model: options.lxc ? lxcModel : options.model,
  });
  try {
    const name = options.lxc ? "proxmox-ct" : "proxmox";
    const repo = new SwampRepo(
      options.lxc ? lxcModel : qemuModel,
      { name, globalArgs: { ...env.globalArgs, name } },
      { vault: true, extensionFiles: PACKAGE_FILES },
    );
    const repos = new Map([[name, repo]]);
    await body({
      env,
      repo,
      run: async (file, inputs = {}, opts = {}) => {
        const run = await runWorkflow(repos, packageWorkflow(file), {
          ...opts,
          inputs,
        });
        assertNoSecret(`the run of ${file}`, run);
        for (const instance of repo.instances()) {
          assertNoSecret(`record ${instance}`, repo.versions(instance));
        }
        return run;
      },
      record: (instance) =>
        repo.latest(instance) as Record<string, unknown> | undefined ??
          undefined,
    });
  } finally {
    await env.close();
  }
}
