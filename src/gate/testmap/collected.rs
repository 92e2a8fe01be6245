//! Whether the project's test command collects a new test file at all.
//!
//! A test file that never runs proves nothing, and a change whose only new test is such a file has not
//! added a test: `tests/sub/x.rs` that no `mod` declaration reaches is not compiled by cargo, `check_x.py`
//! does not match pytest's `python_files`, a `_test.go` file behind `//go:build ignore` or under `testdata/`
//! is skipped by `go test`. Decided from the tree at head, before anything runs: cargo's target layout
//! (`Cargo.toml`'s `autotests`, `[[test]]`, `[lib]`, `[[bin]]`) and each target's `mod` tree; pytest's
//! discovery settings and the paths the test command names; Go's build constraints, file name suffixes and
//! the package patterns the test command names.

use std::collections::{BTreeSet, VecDeque};

use crate::gate::results::Runner;

use super::pytest::{command_paths, PytestConfig};
use super::sources::Sources;

/// What the test command does with a new test file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Collected {
    Yes,
    /// It never runs, and why.
    No(String),
    /// The test command's runner does not run files of this kind, or it cannot be told.
    Unknown,
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

fn join(dir: &str, rest: &str) -> String {
    if dir.is_empty() {
        rest.to_owned()
    } else {
        format!("{dir}/{rest}")
    }
}

/// Whether a test step (its runner and argv) collects the file at `path` of `tree`.
pub fn collected(runner: Runner, argv: &[String], path: &str, tree: &dyn Sources) -> Collected {
    match runner {
        Runner::Cargo if path.ends_with(".rs") => rust(path, tree),
        Runner::Pytest if path.ends_with(".py") => python(argv, path, tree),
        Runner::Go if path.ends_with("_test.go") => go(argv, path, tree),
        _ => Collected::Unknown,
    }
}

fn python(argv: &[String], path: &str, tree: &dyn Sources) -> Collected {
    let name = path.rsplit('/').next().unwrap_or(path);
    if name == "conftest.py" || name == "__init__.py" {
        return Collected::Unknown;
    }
    // A module without tests is a helper: it runs when a test imports it, whatever its name.
    let has_tests = tree
        .text(path)
        .and_then(|t| crate::gate::syntax::scan(crate::gate::syntax::Lang::Python, &t))
        .is_some_and(|s| !s.tests.is_empty());
    if !has_tests {
        return Collected::Unknown;
    }
    let config = PytestConfig::read(tree);
    match config.not_collected(path, &command_paths(argv, tree)) {
        Some(why) => Collected::No(format!("pytest does not collect it: {why}")),
        None => Collected::Yes,
    }
}

// ---------------------------------------------------------------------------------------------------------
// Rust

/// The targets `cargo test` builds in test mode for the package rooted at `root`, as file paths.
fn rust_targets(root: &str, manifest: &toml::Value, paths: &[String]) -> Vec<String> {
    let exists = |p: &str| paths.iter().any(|x| x == p);
    let tested = |t: &toml::Value| t.get("test").and_then(|v| v.as_bool()).unwrap_or(true);
    let package = manifest.get("package");
    let auto = |key: &str| {
        package
            .and_then(|p| p.get(key))
            .and_then(|v| v.as_bool())
            .unwrap_or(true)
    };
    let mut out = Vec::new();
    // The library.
    let lib = manifest.get("lib");
    if lib.is_none_or(tested) {
        let path = lib
            .and_then(|l| l.get("path"))
            .and_then(|p| p.as_str())
            .map_or_else(|| join(root, "src/lib.rs"), |p| join(root, p));
        out.push(path);
    }
    // Explicit binaries and tests.
    for (kind, dir) in [("bin", "src/bin"), ("test", "tests")] {
        for t in manifest
            .get(kind)
            .and_then(|v| v.as_array())
            .into_iter()
            .flatten()
        {
            if !tested(t) {
                continue;
            }
            if let Some(p) = t.get("path").and_then(|p| p.as_str()) {
                out.push(join(root, p));
            } else if let Some(name) = t.get("name").and_then(|n| n.as_str()) {
                let file = join(root, &format!("{dir}/{name}.rs"));
                if exists(&file) {
                    out.push(file);
                } else {
                    out.push(join(root, &format!("{dir}/{name}/main.rs")));
                }
            }
        }
    }
    // Discovered binaries and tests: a file right under the directory, or a directory with main.rs.
    let discovered = |dir: &str| -> Vec<String> {
        let prefix = join(root, dir) + "/";
        paths
            .iter()
            .filter_map(|p| p.strip_prefix(&prefix).map(|rest| (p, rest)))
            .filter(|(_, rest)| {
                (rest.ends_with(".rs") && !rest.contains('/'))
                    || rest.split('/').count() == 2 && rest.ends_with("/main.rs")
            })
            .map(|(p, _)| p.clone())
            .collect()
    };
    if auto("autobins") {
        out.push(join(root, "src/main.rs"));
        out.extend(discovered("src/bin"));
    }
    if auto("autotests") {
        out.extend(discovered("tests"));
    }
    out.retain(|p| exists(p));
    out
}

/// The files a target root reaches through `mod name;` declarations (`#[path]` attributes followed), the
/// roots included.
fn mod_tree(roots: &[String], tree: &dyn Sources) -> BTreeSet<String> {
    let paths: BTreeSet<String> = tree.paths().into_iter().collect();
    // A file can be a target root and a module of another target at once: its `mod`s resolve differently.
    let mut seen: BTreeSet<(String, bool)> = BTreeSet::new();
    let mut queue: VecDeque<(String, bool)> = roots.iter().map(|r| (r.clone(), true)).collect();
    while let Some((file, is_root)) = queue.pop_front() {
        if !seen.insert((file.clone(), is_root)) {
            continue;
        }
        let Some(text) = tree.text(&file) else {
            continue;
        };
        let Ok(parsed) = syn::parse_file(&text) else {
            continue;
        };
        let name = file.rsplit('/').next().unwrap_or(&file);
        // Where `mod x;` of this file looks: its own directory for a crate root or a mod.rs, else a
        // directory named after it.
        let dir = if is_root || name == "mod.rs" {
            parent(&file).to_owned()
        } else {
            join(parent(&file), name.trim_end_matches(".rs"))
        };
        let mut found = Vec::new();
        mods_in(&parsed.items, parent(&file), &dir, &mut found);
        for (candidates, _) in found {
            if let Some(hit) = candidates.into_iter().find(|c| paths.contains(c)) {
                queue.push_back((hit, false));
            }
        }
    }
    seen.into_iter().map(|(file, _)| file).collect()
}

/// The candidate files of each `mod name;` among `items`; `dir` is where they are looked for, `file_dir`
/// the declaring file's directory (for `#[path]`).
fn mods_in(items: &[syn::Item], file_dir: &str, dir: &str, out: &mut Vec<(Vec<String>, String)>) {
    for item in items {
        let syn::Item::Mod(m) = item else { continue };
        let name = m.ident.to_string();
        let path_attr = m.attrs.iter().find_map(|a| {
            if !a.path().is_ident("path") {
                return None;
            }
            match &a.meta {
                syn::Meta::NameValue(nv) => match &nv.value {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s),
                        ..
                    }) => Some(s.value()),
                    _ => None,
                },
                _ => None,
            }
        });
        match &m.content {
            None => {
                let candidates = match &path_attr {
                    Some(p) => vec![normalize(&join(file_dir, p))],
                    None => vec![
                        join(dir, &format!("{name}.rs")),
                        join(dir, &format!("{name}/mod.rs")),
                    ],
                };
                out.push((candidates, name));
            }
            Some((_, inner)) => {
                let inner_dir = match &path_attr {
                    Some(p) => normalize(&join(dir, p)),
                    None => join(dir, &name),
                };
                mods_in(inner, &inner_dir, &inner_dir, out);
            }
        }
    }
}

/// `a/./b/../c` → `a/c`.
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

fn rust(path: &str, tree: &dyn Sources) -> Collected {
    // The package: the nearest directory above with a Cargo.toml that has a [package].
    let mut dir = parent(path).to_owned();
    let (root, manifest) = loop {
        let manifest = tree
            .text(&join(&dir, "Cargo.toml"))
            .and_then(|t| toml::from_str::<toml::Value>(&t).ok())
            .filter(|m| m.get("package").is_some());
        if let Some(m) = manifest {
            break (dir, m);
        }
        if dir.is_empty() {
            return Collected::Unknown;
        }
        dir = parent(&dir).to_owned();
    };
    let paths = tree.paths();
    let roots = rust_targets(&root, &manifest, &paths);
    if roots.iter().any(|r| r == path) {
        return Collected::Yes;
    }
    if mod_tree(&roots, tree).contains(path) {
        Collected::Yes
    } else {
        Collected::No(
            "cargo does not build it: not a test target of the package, and no `mod` declaration of one reaches it"
                .into(),
        )
    }
}

// ---------------------------------------------------------------------------------------------------------
// Go

const GOOS: &[&str] = &[
    "aix",
    "android",
    "darwin",
    "dragonfly",
    "freebsd",
    "hurd",
    "illumos",
    "ios",
    "js",
    "linux",
    "nacl",
    "netbsd",
    "openbsd",
    "plan9",
    "solaris",
    "wasip1",
    "windows",
    "zos",
];
const GOARCH: &[&str] = &[
    "386",
    "amd64",
    "amd64p32",
    "arm",
    "armbe",
    "arm64",
    "arm64be",
    "loong64",
    "mips",
    "mipsle",
    "mips64",
    "mips64le",
    "mips64p32",
    "mips64p32le",
    "ppc",
    "ppc64",
    "ppc64le",
    "riscv",
    "riscv64",
    "s390",
    "s390x",
    "sparc",
    "sparc64",
    "wasm",
];

fn this_goos() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        os => os,
    }
}

fn this_goarch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64",
        arch => arch,
    }
}

/// The build tags that hold when `go test` runs here with `-tags` from its argv.
fn go_tags(argv: &[String]) -> BTreeSet<String> {
    let mut tags: BTreeSet<String> = [this_goos(), this_goarch(), "gc", "cgo"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    if std::env::consts::FAMILY == "unix" {
        tags.insert("unix".into());
    }
    for minor in 1..=40 {
        tags.insert(format!("go1.{minor}"));
    }
    let mut args = argv.iter();
    while let Some(a) = args.next() {
        let value = if a == "-tags" || a == "--tags" {
            args.next().cloned()
        } else {
            a.strip_prefix("-tags=")
                .or_else(|| a.strip_prefix("--tags="))
                .map(str::to_owned)
        };
        if let Some(v) = value {
            tags.extend(
                v.split([',', ' '])
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned),
            );
        }
    }
    tags
}

/// The package patterns of a `go test` argv (`./...`, `./pkg/...`, `.`); `.` when it names none.
fn go_patterns(argv: &[String]) -> Vec<String> {
    const VALUED: &[&str] = &[
        "-run",
        "-skip",
        "-tags",
        "-timeout",
        "-count",
        "-p",
        "-parallel",
        "-bench",
        "-benchtime",
        "-cpu",
        "-exec",
        "-o",
        "-coverprofile",
        "-covermode",
        "-coverpkg",
        "-ldflags",
        "-gcflags",
        "-mod",
    ];
    let Some(at) = argv.iter().position(|a| a == "test") else {
        return vec![".".into()];
    };
    let mut out = Vec::new();
    let mut args = argv[at + 1..].iter();
    while let Some(a) = args.next() {
        if a == "--" || a == "-args" {
            break;
        }
        if a.starts_with('-') {
            if VALUED.contains(&a.as_str()) {
                args.next();
            }
            continue;
        }
        if a.starts_with('.') && !a.contains('{') {
            out.push(a.clone());
        }
    }
    if out.is_empty() {
        out.push(".".into());
    }
    out
}

/// Whether a package directory matches a `go test` package pattern.
fn go_pattern_matches(pattern: &str, dir: &str) -> bool {
    let p = pattern.trim_start_matches("./").trim_end_matches('/');
    let p = if p == "." { "" } else { p };
    match p.strip_suffix("...") {
        Some(prefix) => {
            let prefix = prefix.trim_end_matches('/');
            prefix.is_empty() || dir == prefix || dir.starts_with(&format!("{prefix}/"))
        }
        None => dir == p,
    }
}

fn go(argv: &[String], path: &str, tree: &dyn Sources) -> Collected {
    let dir = parent(path);
    let name = path.rsplit('/').next().unwrap_or(path);
    if let Some(skipped) = dir
        .split('/')
        .find(|d| *d == "testdata" || d.starts_with('_') || d.starts_with('.'))
    {
        return Collected::No(format!(
            "go test does not build it: `{skipped}` directories are not packages of the module"
        ));
    }
    if name.starts_with('_') || name.starts_with('.') {
        return Collected::No("go ignores files whose name starts with `_` or `.`".into());
    }
    // A nested module is not part of the root module's `./...`.
    let mut d = dir.to_owned();
    while !d.is_empty() {
        if tree.text(&join(&d, "go.mod")).is_some() {
            return Collected::No(format!(
                "it belongs to the nested module {d}/go.mod, which go test at the root does not enter"
            ));
        }
        d = parent(&d).to_owned();
    }
    let patterns = go_patterns(argv);
    if !patterns.iter().any(|p| go_pattern_matches(p, dir)) {
        return Collected::No(format!(
            "its package is not among the packages the test command names ({})",
            patterns.join(" ")
        ));
    }
    let stem = name.trim_end_matches("_test.go");
    let parts: Vec<&str> = stem.split('_').collect();
    let (goos, goarch) = (this_goos(), this_goarch());
    if parts.len() > 1 {
        let last = parts[parts.len() - 1];
        let before = parts.len().checked_sub(2).map(|i| parts[i]);
        let excluded = if GOARCH.contains(&last) {
            last != goarch || before.is_some_and(|b| GOOS.contains(&b) && b != goos)
        } else {
            GOOS.contains(&last) && last != goos
        };
        if excluded {
            return Collected::No(format!(
                "its file name restricts it to another platform than {goos}/{goarch}"
            ));
        }
    }
    let Some(text) = tree.text(path) else {
        return Collected::Unknown;
    };
    let tags = go_tags(argv);
    match build_constraint(&text) {
        Some(expr) if !eval_constraint(&expr, &tags).unwrap_or(true) => Collected::No(format!(
            "its build constraint `{expr}` excludes it from go test here"
        )),
        _ => Collected::Yes,
    }
}

/// A Go file's build constraint: the `//go:build` line before the package clause, or the legacy
/// `// +build` lines (their lines and'ed, the space-separated terms or'ed, commas and'ed) as one expression.
fn build_constraint(text: &str) -> Option<String> {
    let mut legacy = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("package ") {
            break;
        }
        if let Some(expr) = t.strip_prefix("//go:build ") {
            return Some(expr.trim().to_owned());
        }
        if let Some(expr) = t.strip_prefix("// +build ") {
            let ors: Vec<String> = expr
                .split_whitespace()
                .map(|term| format!("({})", term.split(',').collect::<Vec<_>>().join(" && ")))
                .collect();
            legacy.push(format!("({})", ors.join(" || ")));
        }
    }
    (!legacy.is_empty()).then(|| legacy.join(" && "))
}

/// Evaluates a build constraint expression (`!`, `&&`, `||`, parentheses, tags); None if it does not parse.
fn eval_constraint(expr: &str, tags: &BTreeSet<String>) -> Option<bool> {
    let mut tokens = Vec::new();
    let chars: Vec<char> = expr.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' => i += 1,
            '!' | '(' | ')' => {
                tokens.push(c.to_string());
                i += 1;
            }
            '&' | '|' => {
                if chars.get(i + 1) != Some(&c) {
                    return None;
                }
                tokens.push(format!("{c}{c}"));
                i += 2;
            }
            _ => {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || "_.".contains(chars[i])) {
                    i += 1;
                }
                if start == i {
                    return None;
                }
                tokens.push(chars[start..i].iter().collect());
            }
        }
    }
    let mut pos = 0;
    let value = or_expr(&tokens, &mut pos, tags)?;
    (pos == tokens.len()).then_some(value)
}

fn or_expr(tokens: &[String], pos: &mut usize, tags: &BTreeSet<String>) -> Option<bool> {
    let mut value = and_expr(tokens, pos, tags)?;
    while tokens.get(*pos).is_some_and(|t| t == "||") {
        *pos += 1;
        value |= and_expr(tokens, pos, tags)?;
    }
    Some(value)
}

fn and_expr(tokens: &[String], pos: &mut usize, tags: &BTreeSet<String>) -> Option<bool> {
    let mut value = not_expr(tokens, pos, tags)?;
    while tokens.get(*pos).is_some_and(|t| t == "&&") {
        *pos += 1;
        value &= not_expr(tokens, pos, tags)?;
    }
    Some(value)
}

fn not_expr(tokens: &[String], pos: &mut usize, tags: &BTreeSet<String>) -> Option<bool> {
    let token = tokens.get(*pos)?;
    *pos += 1;
    match token.as_str() {
        "!" => Some(!not_expr(tokens, pos, tags)?),
        "(" => {
            let v = or_expr(tokens, pos, tags)?;
            (tokens.get(*pos)? == ")").then_some(())?;
            *pos += 1;
            Some(v)
        }
        ")" | "&&" | "||" => None,
        tag => Some(tags.contains(tag)),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn tree(files: &[(&str, &str)]) -> BTreeMap<String, String> {
        files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect()
    }

    fn argv(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    const TEST: &str = "#[test]\nfn t() {}\n";

    #[test]
    fn rust_test_files_are_collected_as_targets_or_modules_of_one() {
        let files = tree(&[
            (
                "Cargo.toml",
                "[package]\nname = \"m\"\nversion = \"0.1.0\"\n",
            ),
            ("src/lib.rs", "mod inner;\n"),
            ("src/inner.rs", "#[cfg(test)]\nmod tests;\n"),
            ("src/inner/tests.rs", TEST),
            (
                "tests/top.rs",
                "mod sub;\n#[path = \"other/p.rs\"]\nmod p;\n",
            ),
            ("tests/sub.rs", "mod deeper;\n"),
            ("tests/sub/deeper.rs", TEST),
            ("tests/other/p.rs", TEST),
            ("tests/dir/main.rs", TEST),
            ("tests/lost/x.rs", TEST),
        ]);
        let cargo = argv(&["cargo", "test"]);
        for path in [
            "tests/top.rs",
            "tests/sub/deeper.rs",
            "tests/other/p.rs",
            "tests/dir/main.rs",
            "src/inner/tests.rs",
        ] {
            assert_eq!(
                collected(Runner::Cargo, &cargo, path, &files),
                Collected::Yes,
                "{path}"
            );
        }
        assert!(matches!(
            collected(Runner::Cargo, &cargo, "tests/lost/x.rs", &files),
            Collected::No(_)
        ));
    }

    #[test]
    fn without_autotests_only_declared_targets_and_their_modules_are_collected() {
        let files = tree(&[
            (
                "Cargo.toml",
                "[package]\nname = \"m\"\nversion = \"0.1.0\"\nautotests = false\n\n[[test]]\nname = \"integration\"\npath = \"tests/tests.rs\"\n",
            ),
            ("src/lib.rs", ""),
            ("tests/tests.rs", "mod regression;\n"),
            ("tests/regression.rs", TEST),
            ("tests/stray.rs", TEST),
        ]);
        let cargo = argv(&["cargo", "test"]);
        assert_eq!(
            collected(Runner::Cargo, &cargo, "tests/regression.rs", &files),
            Collected::Yes
        );
        assert!(matches!(
            collected(Runner::Cargo, &cargo, "tests/stray.rs", &files),
            Collected::No(_)
        ));
    }

    #[test]
    fn python_test_modules_follow_pytest_discovery_and_helpers_are_not_judged() {
        let files = tree(&[
            ("tests/test_a.py", "def test_a():\n    assert 1\n"),
            ("tests/check_b.py", "def test_b():\n    assert 1\n"),
            ("tests/helpers.py", "def make():\n    return 1\n"),
        ]);
        let pytest = argv(&["python3", "-m", "pytest", "-q"]);
        assert_eq!(
            collected(Runner::Pytest, &pytest, "tests/test_a.py", &files),
            Collected::Yes
        );
        assert_eq!(
            collected(Runner::Pytest, &pytest, "tests/check_b.py", &files),
            Collected::No(
                "pytest does not collect it: its name does not match python_files (test_*.py *_test.py)"
                    .into()
            )
        );
        assert_eq!(
            collected(Runner::Pytest, &pytest, "tests/helpers.py", &files),
            Collected::Unknown
        );
    }

    #[test]
    fn go_files_behind_build_tags_testdata_or_other_platforms_are_not_collected() {
        let t = "package m\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {}\n";
        let ignored = format!("//go:build ignore\n\n{t}");
        let tagged = format!("//go:build integration && !windows\n\n{t}");
        let legacy = format!("// +build ignore\n\n{t}");
        let files = tree(&[
            ("go.mod", "module example.com/m\n"),
            ("a_test.go", t),
            ("ignored_test.go", &ignored),
            ("tagged_test.go", &tagged),
            ("legacy_test.go", &legacy),
            ("testdata/x_test.go", t),
            ("calc_windows_test.go", t),
            ("calc_linux_test.go", t),
            ("sub/go.mod", "module example.com/sub\n"),
            ("sub/s_test.go", t),
        ]);
        let go_test = argv(&["go", "test", "-json", "-count=1", "./..."]);
        let yes = |p: &str, a: &[String]| collected(Runner::Go, a, p, &files) == Collected::Yes;
        assert!(yes("a_test.go", &go_test));
        assert!(!yes("ignored_test.go", &go_test));
        assert!(!yes("legacy_test.go", &go_test));
        assert!(!yes("tagged_test.go", &go_test));
        assert!(!yes("testdata/x_test.go", &go_test));
        assert!(!yes("sub/s_test.go", &go_test));
        assert_eq!(yes("calc_linux_test.go", &go_test), this_goos() == "linux");
        assert_eq!(
            yes("calc_windows_test.go", &go_test),
            this_goos() == "windows"
        );
        let with_tags = argv(&["go", "test", "-tags", "integration", "./..."]);
        assert_eq!(yes("tagged_test.go", &with_tags), this_goos() != "windows");
        assert_eq!(
            collected(Runner::Go, &go_test, "ignored_test.go", &files),
            Collected::No("its build constraint `ignore` excludes it from go test here".into())
        );
    }

    #[test]
    fn build_constraints_evaluate_like_go() {
        let tags: BTreeSet<String> = ["linux", "amd64", "go1.19"].map(String::from).into();
        for (expr, want) in [
            ("linux", Some(true)),
            ("!linux", Some(false)),
            ("linux && (arm64 || amd64)", Some(true)),
            ("ignore", Some(false)),
            ("go1.19 && !go1.21", Some(true)),
            ("linux &&", None),
            ("a & b", None),
        ] {
            assert_eq!(eval_constraint(expr, &tags), want, "{expr}");
        }
        assert_eq!(
            build_constraint("// +build linux,amd64 darwin\n\npackage m\n").as_deref(),
            Some("((linux && amd64) || (darwin))")
        );
        assert_eq!(
            go_patterns(&argv(&["go", "test", "-run", "X", "./pkg/..."])),
            vec!["./pkg/...".to_string()]
        );
        assert!(go_pattern_matches("./...", "a/b"));
        assert!(go_pattern_matches("./a/...", "a/b"));
        assert!(!go_pattern_matches("./a/...", "ab"));
        assert!(go_pattern_matches(".", ""));
        assert!(!go_pattern_matches(".", "a"));
    }
}
