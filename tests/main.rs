//! The integration tests: one binary, real toolchains (cargo, go, python3 + pytest + ruff, node), real git.
//!
//! Each case builds a fixture repository in a temporary directory with hermetic git and runs the real `vouch`
//! binary against it. CI (`.ci/run`) installs every toolchain these need.

mod util;

mod cases;
