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
        vec!["run", "--help"],
        vec!["clean", "--help"],
        vec!["model", "setup", "--help"],
        vec!["model", "list", "--help"],
        vec!["model", "serve", "--help"],
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

fn parse_stdin(args: &[&str], input: &str) -> (i32, String, String) {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_vouch"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        // A child that refuses its arguments exits before reading: a broken pipe is not this test's concern.
        .ok();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn toolcalls_parse_recovers_a_leaked_laguna_call_from_stdin() {
    let (code, stdout, stderr) = parse_stdin(
        &["toolcalls", "parse"],
        "Let me look.\n<tool_call>read_file<arg_key>path</arg_key><arg_value>internal/controller/scheduling.go</arg_value></tool_call>",
    );
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        v,
        serde_json::json!({
            "format": "glm",
            "calls": [{"name": "read_file", "arguments": {"path": "internal/controller/scheduling.go"}}],
            "content": "Let me look."
        })
    );
}

#[test]
fn toolcalls_parse_takes_offered_tools_and_refuses_unknown_formats() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools.json");
    std::fs::write(
        &tools,
        r#"[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}]"#,
    )
    .unwrap();
    let (code, stdout, stderr) = parse_stdin(
        &["toolcalls", "parse", "--tools", tools.to_str().unwrap()],
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\", \"days\": \"3\"}}\n</tool_call>",
    );
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        v["calls"],
        serde_json::json!([{"name": "get_weather", "arguments": {"city": "Zürich", "days": 3}}])
    );
    let (code, _, stderr) = parse_stdin(&["toolcalls", "parse", "--format", "nope"], "hi");
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("nope"), "{stderr}");
}

/// Runs vouch with its stdout read by a reader that goes away: after `read` lines (0: before any output),
/// the read end of the pipe is closed. Returns the exit code (-1 for a signal) and stderr.
fn with_stdout_closed_early(args: &[&str], stdin: Option<&str>, read: usize) -> (i32, String) {
    use std::io::{BufRead, Read, Write};
    let mut child = Command::new(env!("CARGO_BIN_EXE_vouch"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut input = child.stdin.take().unwrap();
    if read == 0 {
        drop(stdout);
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).unwrap();
        }
        drop(input);
    } else {
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).unwrap();
        }
        drop(input);
        let mut lines = std::io::BufReader::new(stdout);
        for _ in 0..read {
            let mut line = String::new();
            lines.read_line(&mut line).unwrap();
            assert!(
                !line.is_empty(),
                "vouch {args:?} printed fewer than {read} lines"
            );
        }
        drop(lines);
    }
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    (status.code().unwrap_or(-1), stderr)
}

#[test]
fn a_reader_that_stops_early_is_a_clean_end_of_the_output() {
    let reply = "<tool_call>\n{\"name\": \"list_files\", \"arguments\": {}}\n</tool_call>";
    for (args, stdin) in [
        (vec!["profile", "--name", "rust"], None),
        (vec!["profile", "--list"], None),
        (vec!["toolcalls", "parse"], Some(reply)),
    ] {
        for read in [0, 1] {
            let (code, stderr) = with_stdout_closed_early(&args, stdin, read);
            assert!(
                !stderr.contains("panicked") && !stderr.contains("error"),
                "vouch {args:?} (pipe closed after {read} lines) wrote to stderr:\n{stderr}"
            );
            assert_eq!(
                code, 0,
                "vouch {args:?} (pipe closed after {read} lines)\n{stderr}"
            );
        }
    }
}

/// The layering: domain code (the gate, the agent, the model client, the tools, tool-call recovery, the sandbox)
/// never depends on the command line; the CLI depends on it.
#[test]
fn domain_modules_never_import_the_cli() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut offenders = Vec::new();
    let mut stack: Vec<std::path::PathBuf> =
        ["gate", "agent", "model", "tools", "toolcall", "sandbox"]
            .iter()
            .map(|d| src.join(d))
            .chain(
                [
                    "layers.rs",
                    "secret.rs",
                    "process.rs",
                    "room.rs",
                    "git.rs",
                    "workspace.rs",
                ]
                .iter()
                .map(|f| src.join(f)),
            )
            .collect();
    let mut seen = 0;
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        } else if p.extension().is_some_and(|x| x == "rs") {
            seen += 1;
            let text = std::fs::read_to_string(&p).unwrap();
            if text.contains("crate::cli") || text.contains("crate::commands") {
                offenders.push(p.display().to_string());
            }
        }
    }
    assert!(seen > 50, "only {seen} files scanned");
    assert!(
        offenders.is_empty(),
        "domain files import the CLI: {offenders:?}"
    );
}

/// `vouch run ARGS` in a fresh directory, killed after 30 s: `Some((exit code, stderr))`, `None` when it had
/// to be killed (it blocked).
fn run_bounded(dir: &std::path::Path, args: &[&str]) -> Option<(i32, String)> {
    use std::io::Read;
    let mut child = Command::new(env!("CARGO_BIN_EXE_vouch"))
        .arg("run")
        .args(args)
        .current_dir(dir)
        .env("VOUCH_DATA", dir.join("data"))
        .env("VOUCH_CACHE", dir.join("cache"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut stderr)
                .unwrap();
            return Some((status.code().unwrap_or(-1), stderr));
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn a_fifo_a_directory_or_a_device_as_the_task_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("task.md");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let link = dir.path().join("link.md");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    let task = dir.path().join("ok.md");
    std::fs::write(&task, "---\ntitle: t\n---\nbody\n").unwrap();
    let repo = dir.path().display().to_string();
    let (fifo, link, task) = (
        fifo.display().to_string(),
        link.display().to_string(),
        task.display().to_string(),
    );
    for (args, path, kind) in [
        (vec!["--task", &fifo], &fifo, "is a FIFO"),
        (vec!["--task", &link], &link, "is a FIFO"),
        (vec!["--task", &repo], &repo, "is a directory"),
        (
            vec!["--task", "/dev/zero"],
            &"/dev/zero".to_string(),
            "is a character device",
        ),
        (
            vec!["--task", &task, "--prior-findings", &fifo],
            &fifo,
            "is a FIFO",
        ),
    ] {
        let mut full = vec!["--repo", &repo];
        full.extend(&args);
        let Some((code, stderr)) = run_bounded(dir.path(), &full) else {
            panic!("vouch run {args:?} blocked");
        };
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("{path} {kind}")),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn task_text_over_the_cap_is_refused_with_its_size_and_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().display().to_string();
    // 100 MB, sparse: refused by its size, never read into memory.
    let huge = dir.path().join("huge.md");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(100 << 20)
        .unwrap();
    let over = dir.path().join("over.md");
    std::fs::write(&over, format!("# t\n\n{}", "x".repeat(300 * 1024 - 5))).unwrap();
    for (path, size) in [
        (&huge, "100.0 MiB (104857600 bytes)"),
        (&over, "300 KiB (307200 bytes)"),
    ] {
        let path = path.display().to_string();
        let (code, stderr) = run_bounded(dir.path(), &["--repo", &repo, "--task", &path]).unwrap();
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains(&path) && stderr.contains(size), "{stderr}");
        assert!(
            stderr.contains("the cap on task text is 256 KiB"),
            "{stderr}"
        );
    }
}
