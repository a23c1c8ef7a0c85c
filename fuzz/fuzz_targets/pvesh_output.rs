//! Any pvesh stdout/stderr and exit code through the ssh transport's reader: no panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use proxmox_core::global_args::SshSettings;
use proxmox_core::host::ProcessOutput;
use proxmox_core::transport::pvesh_output::extract_json;
use proxmox_core::transport::ssh::interpret;

fuzz_target!(|input: &[u8]| {
    let text = String::from_utf8_lossy(input);
    let _ = extract_json(&text);
    let settings = SshSettings {
        node: "pve1".into(),
        host: "pve1".into(),
        user: "root".into(),
        port: 22,
        proxy_jump: None,
        proxy_command: None,
        identity_file: None,
        identity_agent: None,
        strict_host_key_checking: None,
        connect_timeout_sec: 5,
        ssh_binary: "ssh".into(),
        pvesh_binary: "pvesh".into(),
    };
    for code in [Some(0), Some(2), Some(255), None] {
        let output = ProcessOutput {
            code,
            stdout: text.to_string(),
            stderr: text.to_string(),
            stdout_bytes: None,
            stderr_bytes: None,
        };
        let _ = interpret(&settings, &output);
    }
});
