//! UPIDs, property strings (`smbios1`, disk `size=`), sizes and tag lists: no panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use proxmox_core::pve::flex::split_tags;
use proxmox_core::pve::property::{property, size_bytes};
use proxmox_core::pve::upid::Upid;

fuzz_target!(|input: &[u8]| {
    let text = String::from_utf8_lossy(input);
    let _ = Upid::parse(&text);
    let _ = property(&text, "uuid");
    let _ = property(&text, "size");
    let _ = size_bytes(&text);
    let _ = split_tags(&text);
    let _ = proxmox_core::clock::iso_time(f64::from_le_bytes(input.get(..8).and_then(|b| b.try_into().ok()).unwrap_or([0; 8])));
});
