//! One module per method: where each method's decision lives.

pub mod check;
pub mod guest_exec;
pub mod lookup;
