//! The integration tests: one binary, real toolchains (cargo, go, python3 + pytest + ruff, node), real git.
//!
//! Each case builds a fixture repository in a temporary directory with hermetic git and runs the real `vouch`
//! binary against it. CI (`.ci/run`) installs every toolchain these need.

// Test code fails loudly on purpose, and signals the binary under test with libc::kill.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, unsafe_code)]

mod util;

mod cases;
