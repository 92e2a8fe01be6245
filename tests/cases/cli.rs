//! The command line itself: help text everywhere, usage errors.

use std::process::Command;

fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_vouch"))
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn every_flag_of_every_command_has_help_text() {
    for cmd in [
        vec!["--help"],
        vec!["gate", "--help"],
        vec!["profile", "--help"],
        vec!["toolcalls", "parse", "--help"],
    ] {
        let text = help(&cmd);
        for line in text.lines() {
            let t = line.trim_start();
            if t.starts_with("--")
                || (t.starts_with('-') && t.chars().nth(1).is_some_and(|c| c.is_ascii_alphabetic()))
            {
                // A flag line has its description after two or more spaces, or on the next line.
                let has_text = t.split("  ").filter(|p| !p.trim().is_empty()).count() >= 2;
                let next = text.lines().skip_while(|l| *l != line).nth(1).unwrap_or("");
                assert!(
                    has_text || next.starts_with("          "),
                    "flag without help in `vouch {}`: {line}",
                    cmd.join(" ")
                );
            }
        }
    }
}

#[test]
fn gate_help_shows_examples_and_exit_codes() {
    let text = help(&["gate", "--help"]);
    assert!(text.contains("Examples:"), "{text}");
    assert!(text
        .contains("Exit codes: 0 pass, 1 fail, 2 usage or config error, 3 infrastructure error"));
}

#[test]
fn the_presets_are_listed() {
    let text = help(&["profile", "--list"]);
    for name in ["rust", "go", "python", "node"] {
        assert!(text.lines().any(|l| l.starts_with(name)), "{text}");
    }
}
