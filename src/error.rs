//! Error kinds that decide the exit code, and the hint a user gets with them.
//!
//! Exit codes are part of the interface (documented in the README):
//! 0 pass, 1 fail (a verdict, not an error), 2 usage or configuration error, 3 infrastructure error
//! (missing tool, bad revision, timeout of the whole gate), 130 interrupted (after cleanup).

use thiserror::Error;

/// Exit code: the gate passed.
pub const EXIT_PASS: i32 = 0;
/// Exit code: the gate failed (a verdict).
pub const EXIT_FAIL: i32 = 1;
/// Exit code: bad usage or configuration.
pub const EXIT_USAGE: i32 = 2;
/// Exit code: infrastructure error (missing tool, bad revision, gate timeout).
pub const EXIT_INFRA: i32 = 3;
/// Exit code: interrupted by Ctrl-C (after cleanup).
pub const EXIT_INTERRUPTED: i32 = 130;

/// An error a caller branches on. Everything else is `anyhow` context.
#[derive(Debug, Error)]
pub enum VouchError {
    /// The user asked for something that cannot work: bad flag combination, bad profile, unknown preset.
    #[error("{message}")]
    Usage {
        message: String,
        hint: Option<String>,
    },
    /// The environment failed us: a missing tool, a revision that does not exist, a timeout.
    #[error("{message}")]
    Infra {
        message: String,
        hint: Option<String>,
    },
    /// Ctrl-C: everything was cleaned up.
    #[error("interrupted")]
    Interrupted,
}

impl VouchError {
    pub fn usage(message: impl Into<String>) -> Self {
        VouchError::Usage {
            message: message.into(),
            hint: None,
        }
    }

    pub fn usage_hint(message: impl Into<String>, hint: impl Into<String>) -> Self {
        VouchError::Usage {
            message: message.into(),
            hint: Some(hint.into()),
        }
    }

    pub fn infra(message: impl Into<String>) -> Self {
        VouchError::Infra {
            message: message.into(),
            hint: None,
        }
    }

    pub fn infra_hint(message: impl Into<String>, hint: impl Into<String>) -> Self {
        VouchError::Infra {
            message: message.into(),
            hint: Some(hint.into()),
        }
    }
}

/// The exit code for an error: the first [`VouchError`] in the chain decides, else infrastructure.
pub fn exit_code_of(err: &anyhow::Error) -> i32 {
    match err.chain().find_map(|e| e.downcast_ref::<VouchError>()) {
        Some(VouchError::Usage { .. }) => EXIT_USAGE,
        Some(VouchError::Interrupted) => EXIT_INTERRUPTED,
        Some(VouchError::Infra { .. }) | None => EXIT_INFRA,
    }
}

/// The hint attached to the first [`VouchError`] in the chain, if any.
pub fn hint_of(err: &anyhow::Error) -> Option<&str> {
    match err.chain().find_map(|e| e.downcast_ref::<VouchError>())? {
        VouchError::Usage { hint, .. } | VouchError::Infra { hint, .. } => hint.as_deref(),
        VouchError::Interrupted => None,
    }
}
