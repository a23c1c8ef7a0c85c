//! Any HTTP answer (status + body) through the api transport and every typed PVE answer: no panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use proxmox_core::host::HttpResponse;
use proxmox_core::pve::responses::{parse, ClusterGuest, ExecStarted, ExecStatus, GuestStatus, TaskLogLine, TaskStatus};
use proxmox_core::transport::api::interpret;

fuzz_target!(|input: &[u8]| {
    let Some((&selector, body)) = input.split_first() else { return };
    let status = [200u16, 400, 401, 403, 500, 501, 502, 595][usize::from(selector) % 8];
    let body = String::from_utf8_lossy(body).into_owned();
    let answer = HttpResponse { status, status_text: "reason".into(), body };
    if let Ok(data) = interpret(&answer) {
        let _ = parse::<Vec<ClusterGuest>>(&data);
        let _ = parse::<GuestStatus>(&data);
        let _ = parse::<ExecStarted>(&data);
        let _ = parse::<TaskStatus>(&data);
        let _ = parse::<Vec<TaskLogLine>>(&data);
        let _ = ExecStatus::from_value(&data);
        let _ = proxmox_core::guest::identity::Identity::from_config(&data);
    }
});
