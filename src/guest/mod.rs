//! Guests as both models see them: how a guest is named, found, fingerprinted and recorded.

pub mod identity;
pub mod locate;
pub mod record;
pub mod reference;
