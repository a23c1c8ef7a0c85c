//! Which addresses a guest reports count as its address: only one another host could reach it at.
//! Not the unspecified address (`0.0.0.0`, `::` — an interface still coming up reports it),
//! loopback (`127.0.0.0/8`, `::1`), link-local (`169.254.0.0/16`, `fe80::/10`), multicast
//! (`224.0.0.0/4`, `ff00::/8`) or broadcast (`255.255.255.255`, or the subnet's broadcast address
//! when the prefix is known). `waitReady` and `start`'s `waitForIp` share this rule.

use std::fmt::Write;
use std::net::{IpAddr, Ipv4Addr};

/// An address that was seen but does not count, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub address: String,
    pub why: &'static str,
}

/// Why `address` (with its `prefix` length, when reported) cannot reach the guest; `None` when it
/// can. Text that is not an address at all is not usable either.
pub fn unusable(address: &str, prefix: Option<u8>) -> Option<&'static str> {
    // An IPv6 address may carry a zone (`fe80::1%eth0`).
    let bare = address.split('%').next().unwrap_or_default();
    let ip: IpAddr = match bare.parse() {
        Ok(ip) => ip,
        Err(_) => return Some("not an IP address"),
    };
    match ip {
        IpAddr::V4(v4) => unusable_v4(v4, prefix),
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            if v6.is_unspecified() {
                Some("unspecified")
            } else if v6.is_loopback() {
                Some("loopback")
            } else if first & 0xffc0 == 0xfe80 {
                Some("link-local")
            } else if v6.is_multicast() {
                Some("multicast")
            } else {
                None
            }
        }
    }
}

fn unusable_v4(v4: Ipv4Addr, prefix: Option<u8>) -> Option<&'static str> {
    if v4.is_unspecified() {
        return Some("unspecified");
    }
    if v4.is_loopback() {
        return Some("loopback");
    }
    if v4.is_link_local() {
        return Some("link-local");
    }
    if v4.is_multicast() {
        return Some("multicast");
    }
    if v4.is_broadcast() {
        return Some("broadcast");
    }
    // The subnet's own broadcast address (a /31 or /32 has none).
    if let Some(len) = prefix.filter(|p| *p < 31) {
        let host_bits = u32::MAX >> len;
        if u32::from(v4) & host_bits == host_bits {
            return Some("broadcast");
        }
    }
    None
}

/// `0.0.0.0 (unspecified), fe80::1 (link-local)`, for messages.
pub fn describe_skipped(skipped: &[Skipped]) -> String {
    let mut described = String::new();
    push_skipped(&mut described, skipped);
    described
}

/// [`describe_skipped`] written onto `out`, the message that names them: each in place, not
/// formatted apart and copied in (issue 32).
pub fn push_skipped(out: &mut String, skipped: &[Skipped]) {
    for (at, s) in skipped.iter().enumerate() {
        if at > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{} ({})", s.address, s.why);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_another_host_can_reach_count() {
        for good in [
            "10.0.0.5",
            "192.0.2.20",
            "2001:db8::5",
            "fd00::5",
            "100.64.0.1",
        ] {
            assert_eq!(unusable(good, None), None, "{good}");
        }
        assert_eq!(unusable("10.0.0.5", Some(24)), None);
        assert_eq!(
            unusable("10.0.0.255", Some(31)),
            None,
            "a /31 has no broadcast"
        );
    }

    #[test]
    fn unspecified_loopback_link_local_multicast_and_broadcast_never_count() {
        let cases = [
            ("0.0.0.0", None, "unspecified"),
            ("::", None, "unspecified"),
            ("127.0.0.1", None, "loopback"),
            ("127.1.2.3", None, "loopback"),
            ("::1", None, "loopback"),
            ("169.254.3.4", None, "link-local"),
            ("fe80::1", None, "link-local"),
            ("FEBF::1", None, "link-local"),
            ("fe80::1%eth0", None, "link-local"),
            ("224.0.0.251", None, "multicast"),
            ("ff02::1", None, "multicast"),
            ("255.255.255.255", None, "broadcast"),
            ("10.0.0.255", Some(24), "broadcast"),
            ("not-an-ip", None, "not an IP address"),
        ];
        for (address, prefix, why) in cases {
            assert_eq!(unusable(address, prefix), Some(why), "{address}");
        }
    }
}
