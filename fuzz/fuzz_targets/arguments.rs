//! Any JSON object as method arguments through every argument rule: no panic, only ArgErrors.
#![no_main]
use libfuzzer_sys::fuzz_target;
use proxmox_core::args::Fields;
use proxmox_core::global_args::GlobalArgs;
use proxmox_core::guest::reference::GuestRef;
use proxmox_core::guest::exec::ExecArgs;

fuzz_target!(|input: &[u8]| {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(input) else { return };
    let _ = GlobalArgs::parse(&value);
    let _ = ExecArgs::parse(&value);
    if let Ok(fields) = Fields::of(&value, "") {
        let _ = GuestRef::parse(&fields);
    }
    let _ = proxmox_core::dispatch::validate_arguments("qemu", "guestExec", &value);
});
