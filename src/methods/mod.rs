//! One module per method: where each method's decision lives.

pub mod check;
pub mod clone;
pub mod container_exec;
pub mod create;
pub mod delete;
pub mod delete_snapshot;
pub mod file_read;
pub mod file_write;
pub mod get_config;
pub mod guest_exec;
pub mod list_snapshots;
pub mod lookup;
pub mod migrate;
pub mod node_config;
pub mod node_status;
pub mod reboot;
pub mod resize_disk;
pub mod rollback;
pub mod set_config;
pub mod shutdown;
pub mod snapshot;
pub mod start;
pub mod stop;
pub mod sync;
pub mod template;
