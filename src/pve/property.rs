//! PVE property strings such as `smbios1: uuid=…,manufacturer=…` and `scsi0: local:vm-100-disk-0,size=32G`.

/// The value of `key=` in a comma-separated property string.
pub fn property<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.split(',').find_map(|part| {
        let (k, v) = part.split_once('=')?;
        (k.trim() == key).then(|| v.trim())
    })
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
    let value: f64 = number.parse().ok()?;
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
