//! A `cargo clippy` step run on the build's dependencies (a step with `reuse_build`).
//!
//! `cargo clippy` is `cargo check` with clippy-driver as the compiler of the workspace's members. Checking
//! compiles every dependency again, in check mode, which a build's artifacts do not satisfy: on a cold cache
//! that doubled the work (measured on fd: the build took 373 s beside clippy's 355 s on two cores, against
//! 185 s for a bare cold `cargo test`). Run as a *build* instead, with the same wrapper, cargo judges the
//! dependencies by the same fingerprints as the build step's, and only the members are compiled again, by
//! clippy-driver, under hashes of their own (the wrapper is part of a member's hash, not of a dependency's).
//!
//! The step keeps its own target directory: a build in the test step's directory would put clippy's binaries
//! in place of the test step's (`target/debug/<bin>`, which integration tests run) while tests run, as cargo
//! lets go of its lock once it has built. So the step waits for the build step, its directory gets the
//! build's dependency artifacts as hard links ([`seed_target`](crate::gate::places::seed_target)), and it runs
//! beside the tests.
//!
//! The command is what cargo-clippy itself starts, with `build` for `check`: `RUSTC_WORKSPACE_WRAPPER` names
//! clippy-driver and `CLIPPY_ARGS` carries the arguments after `--`. Findings are the same: clippy's lints run
//! before code generation.

/// The separator cargo-clippy puts after each argument in `CLIPPY_ARGS`, which clippy-driver splits on.
const CLIPPY_ARGS_SEPARATOR: &str = "__CLIPPY_HACKERY__";

/// A `cargo clippy` command as a build.
#[derive(Debug, PartialEq, Eq)]
pub struct AsBuild {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
}

impl AsBuild {
    /// The environment it sets, as a shell prefix for the command a report shows (`CLIPPY_ARGS` when it is
    /// not empty).
    pub fn shown_env(&self) -> String {
        self.env
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| format!("{k}={}", shell_words::quote(v)))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `cargo [+toolchain] clippy [cargo arguments] [-- clippy arguments]` as a build with clippy-driver as the
/// workspace wrapper; None for any other command, and for those cargo-clippy must run itself (`--fix`,
/// `--explain`, help and version).
pub fn as_build(argv: &[String]) -> Option<AsBuild> {
    let program = std::path::Path::new(argv.first()?).file_name()?;
    if program != "cargo" {
        return None;
    }
    let toolchain = argv.get(1).filter(|a| a.starts_with('+'));
    let sub = 1 + usize::from(toolchain.is_some());
    if argv.get(sub).map(String::as_str) != Some("clippy") {
        return None;
    }
    let rest = &argv[sub + 1..];
    let (cargo_args, clippy_args) = match rest.iter().position(|a| a == "--") {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    let own = ["--fix", "--explain", "-h", "--help", "-V", "--version"];
    if cargo_args
        .iter()
        .any(|a| own.contains(&a.as_str()) || a.starts_with("--fix="))
    {
        return None;
    }
    let mut driver_args: Vec<&str> = Vec::new();
    let mut out = vec![argv[0].clone()];
    out.extend(toolchain.cloned());
    out.push("build".into());
    for arg in cargo_args {
        if arg == "--no-deps" {
            driver_args.push("--no-deps");
        } else {
            out.push(arg.clone());
        }
    }
    driver_args.extend(clippy_args.iter().map(String::as_str));
    let joined: String = driver_args
        .iter()
        .map(|a| format!("{a}{CLIPPY_ARGS_SEPARATOR}"))
        .collect();
    Some(AsBuild {
        argv: out,
        env: vec![
            ("RUSTC_WORKSPACE_WRAPPER".into(), "clippy-driver".into()),
            ("CLIPPY_ARGS".into(), joined),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn clippy_becomes_a_build_with_the_driver_as_workspace_wrapper() {
        let b = as_build(&argv(
            "cargo clippy --all-targets --keep-going --message-format=json",
        ))
        .unwrap();
        assert_eq!(
            b.argv,
            argv("cargo build --all-targets --keep-going --message-format=json")
        );
        assert_eq!(
            b.env,
            vec![
                ("RUSTC_WORKSPACE_WRAPPER".into(), "clippy-driver".into()),
                ("CLIPPY_ARGS".into(), String::new()),
            ]
        );
        assert_eq!(b.shown_env(), "RUSTC_WORKSPACE_WRAPPER=clippy-driver");
    }

    #[test]
    fn arguments_after_the_separator_and_no_deps_go_to_the_driver() {
        let b = as_build(&argv(
            "cargo +1.80 clippy --workspace --no-deps -- -D warnings -W clippy::pedantic",
        ))
        .unwrap();
        assert_eq!(b.argv, argv("cargo +1.80 build --workspace"));
        assert_eq!(
            b.env[1].1,
            "--no-deps__CLIPPY_HACKERY__-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__\
             -W__CLIPPY_HACKERY__clippy::pedantic__CLIPPY_HACKERY__"
        );
    }

    #[test]
    fn other_commands_and_clippys_own_modes_are_left_alone() {
        for cmd in [
            "cargo check --all-targets",
            "cargo build",
            "cargo clippy --fix --allow-dirty",
            "cargo clippy --explain needless_return",
            "cargo clippy --version",
            "clippy-driver src/lib.rs",
            "sh -c cargo clippy",
        ] {
            assert_eq!(as_build(&argv(cmd)), None, "{cmd}");
        }
        assert_eq!(as_build(&[]), None);
        assert!(as_build(&argv("/usr/local/bin/cargo clippy")).is_some());
    }
}
