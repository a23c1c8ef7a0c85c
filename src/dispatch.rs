//! From (model, method, arguments) to the method's logic (the names are `catalog`'s table).

use crate::args::{ArgError, Fields};
use crate::catalog::{method_of, Method};
use crate::global_args::GlobalArgs;
use crate::guest::firewall::change_firewall;
use crate::guest::ha::change_ha;
use crate::guest::power::{change_power, power_args};
use crate::guest::reference::GuestRef;
use crate::host::Host;
use crate::methods::change_course::{self, guest_change};
use crate::methods::node_status::read_node;
use crate::methods::{
    attach_disk, backup, check, clone, container_exec, create, delete, delete_backup,
    delete_snapshot, detach_disk, download_url, file_read, file_write, firewall_alias,
    firewall_ipset, firewall_options, firewall_rules, get_config, guest_exec, ha_resource, ha_rule,
    ha_status, list_backups, list_snapshots, lookup, migrate, nic, node_config, node_status,
    preflight, reboot, restore, resume, rollback, set_config, shutdown, snapshot, start, stop,
    suspend, sync, vm_create, wait_ready, wait_task,
};
use crate::outcome::{Failure, Outcome};
use crate::pve::endpoints::GuestKind;
use crate::run::Run;
use crate::scrub::{ScrubbedHost, Scrubber};
use crate::watch::Shared;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;

pub use crate::catalog::{CHECK_PERMISSIONS, CHECK_TRANSPORT_REACHABLE};

/// `value`, unless this build leaves `method` out (`PROXMOX_CORE_OMIT` at build time, to measure
/// what a method costs in the module): then `otherwise`. Decided at compile time, so a left-out
/// method's code is not in the module at all.
macro_rules! kept {
    ($method:expr, $value:expr, $otherwise:expr) => {
        if const { crate::catalog::omitted($method) } {
            $otherwise
        } else {
            $value
        }
    };
}

/// Applies a method's argument rules without running it: `Err` names the field and the rule.
/// (The tests that prove zod and the core agree call this through the wasm boundary.)
pub fn validate_arguments(model: &str, method: &str, args: &Value) -> Result<(), String> {
    let kind = model_kind(model).map_err(|f| f.0)?;
    // One conversion of a refusal to text for all of them (issue 32).
    match method_rules(kind, method, args) {
        Ok(true) => Ok(()),
        Ok(false) => Err(format!(
            "method {method:?} of the {model} model has no argument rules in the core"
        )),
        Err(refusal) => Err(refusal.to_string()),
    }
}

/// [`validate_arguments`] for a known model: `Ok(false)` when the core has no rules for `method`.
fn method_rules(kind: GuestKind, method: &str, args: &Value) -> Result<bool, ArgError> {
    GlobalArgs::parse(args)?;
    let fields = Fields::of(args, "")?;
    let Some(known) = method_of(kind, method) else {
        return Ok(false);
    };
    // Each parser's refusal, if any (`.err()`): an `Option` of the one error type, whatever each
    // parser's result holds, is smaller in the module than each result mapped to `()` (issue 32).
    let refused = match known {
        Method::Lookup | Method::GetConfig | Method::ListSnapshots | Method::HaStatus => {
            GuestRef::parse(&fields).err()
        }
        Method::Migrate => kept!(
            Method::Migrate,
            migrate::MigrateArgs::parse(kind, args).err(),
            None
        ),
        Method::FileWrite => kept!(
            Method::FileWrite,
            file_write::FileWriteArgs::parse(args).err(),
            None
        ),
        Method::FileRead => kept!(
            Method::FileRead,
            file_read::FileReadArgs::parse(args).err(),
            None
        ),
        Method::Snapshot => kept!(
            Method::Snapshot,
            snapshot::snapshot_change(kind, args).err(),
            None
        ),
        Method::Rollback => kept!(
            Method::Rollback,
            rollback::rollback_change(kind, args).err(),
            None
        ),
        Method::DeleteSnapshot => kept!(
            Method::DeleteSnapshot,
            delete_snapshot::delete_snapshot_change(kind, args).err(),
            None
        ),
        Method::GuestExec | Method::ContainerExec => {
            crate::guest::exec::ExecArgs::parse(args).err()
        }
        Method::Start => kept!(
            Method::Start,
            start::StartArgs::parse_for(kind, args).err(),
            None
        ),
        Method::Stop => kept!(
            Method::Stop,
            power_args(kind, args, stop::change).err(),
            None
        ),
        Method::Suspend => kept!(
            Method::Suspend,
            power_args(kind, args, suspend::change).err(),
            None
        ),
        Method::Resume => kept!(
            Method::Resume,
            power_args(kind, args, resume::change).err(),
            None
        ),
        Method::WaitTask => kept!(
            Method::WaitTask,
            wait_task::WaitTaskArgs::parse(args).err(),
            None
        ),
        Method::Shutdown => kept!(
            Method::Shutdown,
            power_args(kind, args, shutdown::change).err(),
            None
        ),
        Method::Delete => kept!(Method::Delete, delete::DeleteArgs::parse(args).err(), None),
        Method::Clone => kept!(Method::Clone, clone::new_clone(args).err(), None),
        Method::Create => kept!(Method::Create, create::CreateArgs::parse(args).err(), None),
        Method::SetConfig => kept!(
            Method::SetConfig,
            set_config::SetConfigArgs::parse(args).err(),
            None
        ),
        Method::Resize => kept!(
            Method::Resize,
            change_course::resize_disk(kind, args).err(),
            None
        ),
        Method::SetNic => kept!(Method::SetNic, nic::set_nic(kind, args).err(), None),
        Method::RemoveNic => kept!(Method::RemoveNic, nic::remove_nic(kind, args).err(), None),
        Method::MoveDisk => kept!(
            Method::MoveDisk,
            change_course::move_disk(kind, args).err(),
            None
        ),
        Method::AttachDisk => kept!(
            Method::AttachDisk,
            attach_disk::attach_disk(kind, args).err(),
            None
        ),
        Method::DetachDisk => kept!(
            Method::DetachDisk,
            detach_disk::detach_disk(kind, args).err(),
            None
        ),
        Method::FirewallOptions => kept!(
            Method::FirewallOptions,
            firewall_options::change(args).err(),
            None
        ),
        Method::FirewallRules => kept!(
            Method::FirewallRules,
            firewall_rules::change(args).err(),
            None
        ),
        Method::FirewallIpset => kept!(
            Method::FirewallIpset,
            firewall_ipset::change(args).err(),
            None
        ),
        Method::FirewallAlias => kept!(
            Method::FirewallAlias,
            firewall_alias::change(args).err(),
            None
        ),
        Method::HaResource => kept!(
            Method::HaResource,
            ha_resource::change(args, kind).err(),
            None
        ),
        Method::HaRule => kept!(Method::HaRule, ha_rule::change(args, kind).err(), None),

        Method::Sync => kept!(Method::Sync, sync::SyncArgs::parse(args).err(), None),
        Method::Template => kept!(
            Method::Template,
            change_course::convert_to_template(kind, args).err(),
            None
        ),
        Method::Reboot => kept!(
            Method::Reboot,
            power_args(kind, args, reboot::change).err(),
            None
        ),
        Method::CloudInit => kept!(
            Method::CloudInit,
            change_course::cloud_init(kind, args).err(),
            None
        ),
        Method::WaitReady => kept!(
            Method::WaitReady,
            wait_ready::WaitReadyArgs::parse(args).err(),
            None
        ),
        Method::NodeStatus | Method::NodeConfig => node_status::NodeArgs::parse(args).err(),
        Method::DownloadUrl => kept!(
            Method::DownloadUrl,
            download_url::DownloadUrlArgs::parse(args).err(),
            None
        ),
        Method::VmCreate => kept!(
            Method::VmCreate,
            vm_create::VmCreateArgs::parse(args).err(),
            None
        ),
        Method::Backup => kept!(Method::Backup, backup::BackupArgs::parse(args).err(), None),
        Method::ListBackups => kept!(
            Method::ListBackups,
            list_backups::ListBackupsArgs::parse(args).err(),
            None
        ),
        Method::DeleteBackup => kept!(
            Method::DeleteBackup,
            delete_backup::DeleteBackupArgs::parse(args).err(),
            None
        ),
        Method::Restore => kept!(
            Method::Restore,
            restore::new_restore(kind, args).err(),
            None
        ),
        Method::Preflight => kept!(
            Method::Preflight,
            preflight::PreflightArgs::parse(kind, args).err(),
            None
        ),
        Method::CheckPermissions => kept!(
            Method::CheckPermissions,
            preflight::CheckArgs::parse(kind, args).err(),
            None
        ),
        Method::CheckReachable => return Ok(false),
    };
    match refused {
        None => Ok(true),
        Some(refusal) => Err(refusal),
    }
}

fn model_kind(model: &str) -> Result<GuestKind, Failure> {
    match model {
        "qemu" => Ok(GuestKind::Qemu),
        "lxc" => Ok(GuestKind::Lxc),
        other => Err(Failure::new(format!(
            "unknown model {other:?}: expected \"qemu\" or \"lxc\""
        ))),
    }
}

/// Runs one method of one model with the merged `{...globalArgs, ...methodArgs}` object. The run's
/// secrets are scrubbed from what comes back (see [`crate::transport::send`]), from every log line
/// and, last, from the outcome.
pub async fn run_method<H: Host>(host: &H, model: &str, method: &str, args: &Value) -> Outcome {
    run_method_in(host, &Shared::default(), model, method, args).await
}

/// [`run_method`] as one of the process's concurrent runs, sharing `shared` with the others (the
/// wasm boundary passes the process's one).
pub async fn run_method_in<H: Host>(
    host: &H,
    shared: &Shared,
    model: &str,
    method: &str,
    args: &Value,
) -> Outcome {
    let scrub = Scrubber::for_args(args);
    let host = ScrubbedHost {
        inner: host,
        scrub: &scrub,
    };
    // The run's course in this function's own state machine, not a wrapper's (issue 32).
    let outcome = 'run: {
        let kind = match model_kind(model) {
            Ok(kind) => kind,
            Err(failure) => break 'run failure.into(),
        };
        let global = match GlobalArgs::parse(args) {
            Ok(global) => global,
            Err(e) => break 'run Failure::from(e).into(),
        };
        let run = Run::new(&host, &global, kind, method, &scrub, shared);
        let Some(known) = method_of(kind, method) else {
            break 'run Failure::new(format!(
                "method {method:?} of the {model} model is not implemented by the core"
            ))
            .into();
        };
        method_future(known, &run, method, args).await
    };
    scrub.outcome(outcome).with_js_numbers()
}

/// The future of the method `known` names (`method`, as the caller spelled it).
fn method_future<'a, H: Host>(
    known: Method,
    run: &'a Run<'a, H>,
    method: &'a str,
    args: &'a Value,
) -> Pin<Box<dyn Future<Output = Outcome> + 'a>> {
    // One boxed future per method: each gets its own poll function instead of one state machine
    // inlining all 27, so a process's first run compiles (wasm lazy compilation) only the method
    // it runs — 9 ms off a cold lookup, measured by `deno task bench --only cold`.
    match known {
        Method::Lookup => kept!(
            Method::Lookup,
            boxed(lookup::lookup(run, args)),
            boxed(left_out(method))
        ),
        Method::Start => kept!(
            Method::Start,
            boxed(start::start(run, args)),
            boxed(left_out(method))
        ),
        Method::Stop => kept!(
            Method::Stop,
            boxed(change_power(run, args, stop::change)),
            boxed(left_out(method))
        ),
        Method::Suspend => kept!(
            Method::Suspend,
            boxed(change_power(run, args, suspend::change)),
            boxed(left_out(method))
        ),
        Method::Resume => kept!(
            Method::Resume,
            boxed(change_power(run, args, resume::change)),
            boxed(left_out(method))
        ),
        Method::WaitTask => kept!(
            Method::WaitTask,
            boxed(wait_task::wait_task(run, args)),
            boxed(left_out(method))
        ),
        Method::Shutdown => kept!(
            Method::Shutdown,
            boxed(change_power(run, args, shutdown::change)),
            boxed(left_out(method))
        ),
        Method::Delete => kept!(
            Method::Delete,
            boxed(delete::delete(run, args)),
            boxed(left_out(method))
        ),
        Method::GetConfig => kept!(
            Method::GetConfig,
            boxed(get_config::get_config(run, args)),
            boxed(left_out(method))
        ),
        Method::SetConfig => kept!(
            Method::SetConfig,
            boxed(guest_change(run, args, change_course::set_config)),
            boxed(left_out(method))
        ),
        Method::SetNic => kept!(
            Method::SetNic,
            boxed(guest_change(run, args, nic::set_nic)),
            boxed(left_out(method))
        ),
        Method::RemoveNic => kept!(
            Method::RemoveNic,
            boxed(guest_change(run, args, nic::remove_nic)),
            boxed(left_out(method))
        ),
        Method::MoveDisk => kept!(
            Method::MoveDisk,
            boxed(guest_change(run, args, change_course::move_disk)),
            boxed(left_out(method))
        ),
        Method::AttachDisk => kept!(
            Method::AttachDisk,
            boxed(guest_change(run, args, attach_disk::attach_disk)),
            boxed(left_out(method))
        ),
        Method::DetachDisk => kept!(
            Method::DetachDisk,
            boxed(guest_change(run, args, detach_disk::detach_disk)),
            boxed(left_out(method))
        ),
        Method::FirewallOptions => kept!(
            Method::FirewallOptions,
            boxed(change_firewall(run, args, firewall_options::change)),
            boxed(left_out(method))
        ),
        Method::FirewallRules => kept!(
            Method::FirewallRules,
            boxed(change_firewall(run, args, firewall_rules::change)),
            boxed(left_out(method))
        ),
        Method::FirewallIpset => kept!(
            Method::FirewallIpset,
            boxed(change_firewall(run, args, firewall_ipset::change)),
            boxed(left_out(method))
        ),
        Method::FirewallAlias => kept!(
            Method::FirewallAlias,
            boxed(change_firewall(run, args, firewall_alias::change)),
            boxed(left_out(method))
        ),
        Method::HaResource => kept!(
            Method::HaResource,
            boxed(change_ha(run, args, ha_resource::change)),
            boxed(left_out(method))
        ),
        Method::HaStatus => kept!(
            Method::HaStatus,
            boxed(change_ha(run, args, ha_status::change)),
            boxed(left_out(method))
        ),
        Method::HaRule => kept!(
            Method::HaRule,
            boxed(change_ha(run, args, ha_rule::change)),
            boxed(left_out(method))
        ),
        Method::Sync => kept!(
            Method::Sync,
            match sync::of_one_guest(args) {
                true => boxed(lookup::recorded(run, args, sync::synced_one)),
                false => boxed(sync::sync(run, args)),
            },
            boxed(left_out(method))
        ),
        Method::GuestExec => kept!(
            Method::GuestExec,
            boxed(guest_exec::guest_exec(run, args)),
            boxed(left_out(method))
        ),
        Method::ContainerExec => kept!(
            Method::ContainerExec,
            boxed(container_exec::container_exec(run, args)),
            boxed(left_out(method))
        ),
        Method::Clone => kept!(
            Method::Clone,
            boxed(clone::clone(run, args)),
            boxed(left_out(method))
        ),
        Method::Create => kept!(
            Method::Create,
            boxed(create::create(run, args)),
            boxed(left_out(method))
        ),
        Method::Resize => kept!(
            Method::Resize,
            boxed(guest_change(run, args, change_course::resize_disk)),
            boxed(left_out(method))
        ),
        Method::NodeStatus => kept!(
            Method::NodeStatus,
            boxed(read_node(run, args, &node_status::NODE_STATUS)),
            boxed(left_out(method))
        ),
        Method::NodeConfig => kept!(
            Method::NodeConfig,
            boxed(read_node(run, args, &node_config::NODE_CONFIG)),
            boxed(left_out(method))
        ),
        Method::Migrate => kept!(
            Method::Migrate,
            boxed(migrate::migrate(run, args)),
            boxed(left_out(method))
        ),
        Method::FileWrite => kept!(
            Method::FileWrite,
            boxed(file_write::file_write(run, args)),
            boxed(left_out(method))
        ),
        Method::FileRead => kept!(
            Method::FileRead,
            boxed(file_read::file_read(run, args)),
            boxed(left_out(method))
        ),
        Method::Snapshot => kept!(
            Method::Snapshot,
            boxed(snapshot::snapshot(run, args)),
            boxed(left_out(method))
        ),
        Method::ListSnapshots => kept!(
            Method::ListSnapshots,
            boxed(list_snapshots::list_snapshots(run, args)),
            boxed(left_out(method))
        ),
        Method::Rollback => kept!(
            Method::Rollback,
            boxed(rollback::rollback(run, args)),
            boxed(left_out(method))
        ),
        Method::DeleteSnapshot => kept!(
            Method::DeleteSnapshot,
            boxed(delete_snapshot::delete_snapshot(run, args)),
            boxed(left_out(method))
        ),
        Method::Template => kept!(
            Method::Template,
            boxed(guest_change(run, args, change_course::convert_to_template)),
            boxed(left_out(method))
        ),
        Method::Reboot => kept!(
            Method::Reboot,
            boxed(change_power(run, args, reboot::change)),
            boxed(left_out(method))
        ),
        Method::CloudInit => kept!(
            Method::CloudInit,
            boxed(guest_change(run, args, change_course::cloud_init)),
            boxed(left_out(method))
        ),
        Method::WaitReady => kept!(
            Method::WaitReady,
            boxed(wait_ready::wait_ready(run, args)),
            boxed(left_out(method))
        ),
        Method::DownloadUrl => kept!(
            Method::DownloadUrl,
            boxed(download_url::download_url(run, args)),
            boxed(left_out(method))
        ),
        Method::VmCreate => kept!(
            Method::VmCreate,
            boxed(vm_create::vm_create(run, args)),
            boxed(left_out(method))
        ),
        Method::CheckReachable => kept!(
            Method::CheckReachable,
            boxed(check::transport_reachable(run)),
            boxed(left_out(method))
        ),
        Method::Backup => kept!(
            Method::Backup,
            boxed(backup::backup(run, args)),
            boxed(left_out(method))
        ),
        Method::ListBackups => kept!(
            Method::ListBackups,
            boxed(list_backups::list_backups(run, args)),
            boxed(left_out(method))
        ),
        Method::DeleteBackup => kept!(
            Method::DeleteBackup,
            boxed(delete_backup::delete_backup(run, args)),
            boxed(left_out(method))
        ),
        Method::Restore => kept!(
            Method::Restore,
            boxed(restore::restore(run, args)),
            boxed(left_out(method))
        ),
        Method::Preflight => kept!(
            Method::Preflight,
            boxed(preflight::preflight(run, args)),
            boxed(left_out(method))
        ),
        Method::CheckPermissions => kept!(
            Method::CheckPermissions,
            boxed(preflight::permissions_check(run, args)),
            boxed(left_out(method))
        ),
    }
}

/// A method this build leaves out ([`kept!`]).
async fn left_out(method: &str) -> Outcome {
    Failure::new(format!(
        "method {method:?} is left out of this build of the core (PROXMOX_CORE_OMIT)"
    ))
    .into()
}

fn boxed<'a>(
    method: impl Future<Output = Outcome> + 'a,
) -> Pin<Box<dyn Future<Output = Outcome> + 'a>> {
    Box::pin(method)
}
