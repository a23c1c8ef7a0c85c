//! PVE property strings such as `smbios1: uuid=…,manufacturer=…` and `scsi0: local:vm-100-disk-0,size=32G`.

/// The value of `key=` in a comma-separated property string.
pub fn property<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.split(',').find_map(|part| {
        let (k, v) = part.split_once('=')?;
        (k.trim() == key).then(|| v.trim())
    })
}

/// The volume a guest's drive or mount point holds on a storage (`local-lvm:vm-100-disk-0,size=32G`
/// → `local-lvm:vm-100-disk-0`): `None` for a CD-ROM (`media=cdrom`, a cloud-init drive included —
/// qemu-server `PVE/QemuServer/Drive.pm` drive_is_cdrom), an empty drive (`none`) or a path.
pub fn storage_volume(value: &str) -> Option<&str> {
    if property(value, "media") == Some("cdrom") {
        return None;
    }
    // The first part without `=` (a loop, not a `find` over a mapped split: its own copy of code).
    let mut bare = None;
    for part in value.split(',') {
        let part = part.trim();
        if !part.contains('=') {
            bare = Some(part);
            break;
        }
    }
    let volume = bare
        .or_else(|| property(value, "file"))
        .or_else(|| property(value, "volume"))?;
    (volume.contains(':') && !volume.starts_with('/')).then_some(volume)
}

/// The size a drive's or mount point's value gives (`…,size=32G`), in bytes: one copy for every
/// method that reads one (issue 32).
pub fn size_of(value: &str) -> Option<u64> {
    property(value, "size").and_then(size_bytes)
}

/// A size such as `32G`, `512M`, `1.5T` or a bare byte count, in bytes.
pub fn size_bytes(text: &str) -> Option<u64> {
    let text = text.trim();
    let (number, unit) = match text.char_indices().last()? {
        (i, c) if c.is_ascii_alphabetic() => (&text[..i], c.to_ascii_uppercase()),
        _ => (text, 'B'),
    };
    let factor: f64 = match unit {
        'B' => 1.0,
        'K' => 1024.0,
        'M' => 1024.0 * 1024.0,
        'G' => 1024.0 * 1024.0 * 1024.0,
        'T' => 1024.0_f64.powi(4),
        _ => return None,
    };
    let value = crate::pve::flex::number_in(number)?;
    if !value.is_finite() || value < 0.0 {
        return None;
    }
    let bytes = value * factor;
    (bytes <= u64::MAX as f64).then_some(bytes.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_smbios_uuid() {
        let s = "uuid=4c4c4544-0042-3510-8052-b4c04f4d4e31,manufacturer=QEMU";
        assert_eq!(
            property(s, "uuid"),
            Some("4c4c4544-0042-3510-8052-b4c04f4d4e31")
        );
    }

    #[test]
    fn finds_disk_size() {
        assert_eq!(
            property("local-zfs:vm-100-disk-0,iothread=1,size=52G", "size"),
            Some("52G")
        );
        assert_eq!(property("local-zfs:vm-100-disk-0", "size"), None);
    }

    #[test]
    fn a_drive_holds_a_storage_volume_unless_it_is_a_cd_rom_empty_or_a_path() {
        let volume = storage_volume;
        assert_eq!(
            volume("local:902/vm-902-disk-0.qcow2,size=1G"),
            Some("local:902/vm-902-disk-0.qcow2")
        );
        assert_eq!(
            volume("iothread=1,file=local-lvm:vm-1-disk-0"),
            Some("local-lvm:vm-1-disk-0")
        );
        assert_eq!(volume("local-lvm:vm-1-cloudinit,media=cdrom"), None);
        assert_eq!(volume("none,media=cdrom"), None);
        assert_eq!(volume("none"), None);
        assert_eq!(volume("/dev/sdb"), None);
        assert_eq!(
            volume("nonvolatile:vm-1-disk-0"),
            Some("nonvolatile:vm-1-disk-0")
        );
    }

    #[test]
    fn sizes_convert_to_bytes() {
        assert_eq!(size_bytes("1K"), Some(1024));
        assert_eq!(size_bytes("52G"), Some(52 * 1024 * 1024 * 1024));
        assert_eq!(size_bytes("1.5M"), Some(1_572_864));
        assert_eq!(size_bytes("4096"), Some(4096));
        assert_eq!(size_bytes("12Q"), None);
        assert_eq!(size_bytes(""), None);
        assert_eq!(size_bytes("-1G"), None);
    }
}
