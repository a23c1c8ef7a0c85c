//! The Proxmox VE API as the core sees it: requests, errors, and typed answers.

pub mod base64;
pub mod config_keys;
pub mod endpoints;
pub mod error;
pub mod exec_data;
pub mod flex;
pub mod privileges;
pub mod property;
pub mod read;
pub mod request;
pub mod responses;
pub mod upid;
