//! What cargo knows about a repository's layout: its targets (from `cargo metadata`), the module files of each
//! target (the `mod` tree from the target's root), and the tests a Rust test file defines, macro-generated ones
//! included.
//!
//! A test file does not name its test binary: with `autotests = false` and `[[test]] name = "integration"
//! path = "tests/tests.rs"`, a test in `tests/regression.rs` runs as `regression::r2574` of the `integration`
//! binary only because the root says `mod regression;`. Guessing from paths (`tests/x.rs` is target `x`) misses
//! every such test, so the targets come from cargo itself and the files of each from its module declarations
//! (`#[path]` attributes included), read from the commit's tree. Tests written as macro invocations
//! (`rgtest!(r2574, |dir, cmd| { .. })`) are named by their first identifier argument.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use proc_macro2::TokenTree;
use serde::Deserialize;
use syn::spanned::Spanned;
use syn::{Attribute, Item};
use tokio_util::sync::CancellationToken;

use crate::gate::profile::Step;
use crate::gate::steps::StepEnv;

/// One cargo target of a workspace member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub package: String,
    pub name: String,
    /// `lib`, `bin`, `test`, `bench`, `example`, `proc-macro`, ...
    pub kind: Vec<String>,
    /// The root file, relative to the repository root (`/`-separated).
    pub src_path: String,
    /// The package's directory, relative to the repository root (`tracing-subscriber`; empty for a package at
    /// the root).
    pub package_dir: String,
    /// Whether `cargo test` builds and runs it by default (`test = false` turns that off).
    pub test: bool,
}

impl Target {
    /// The prefix of this target's test ids in libtest results: `binary stem@root path`, the path as cargo
    /// prints it in `Running tests/x.rs (..)`: relative to the package, so a workspace member's
    /// `tracing-subscriber/tests/layer_filters/main.rs` is `layer_filters@tests/layer_filters/main.rs`.
    pub fn id_prefix(&self) -> String {
        let path = match self.package_dir.as_str() {
            "" => self.src_path.as_str(),
            dir => self
                .src_path
                .strip_prefix(dir)
                .and_then(|p| p.strip_prefix('/'))
                .unwrap_or(&self.src_path),
        };
        format!("{}@{path}", self.name.replace('-', "_"))
    }

    /// Whether the target is a separate test binary (an integration test, a bench or an example), whose files
    /// hold only tests and their helpers, never production code.
    pub fn is_test_binary(&self) -> bool {
        self.kind
            .iter()
            .all(|k| matches!(k.as_str(), "test" | "bench" | "example"))
    }

    /// The `cargo test` arguments that build and run only this target (`--test integration`, `--lib`).
    pub fn selector(&self) -> Vec<String> {
        let kind = self.kind.first().map(String::as_str).unwrap_or("lib");
        match kind {
            "test" => vec!["--test".into(), self.name.clone()],
            "bench" => vec!["--bench".into(), self.name.clone()],
            "example" => vec!["--example".into(), self.name.clone()],
            "bin" => vec!["--bin".into(), self.name.clone()],
            _ => vec!["--lib".into()],
        }
    }
}

#[derive(Deserialize)]
struct Metadata {
    packages: Vec<MetaPackage>,
}

#[derive(Deserialize)]
struct MetaPackage {
    name: String,
    manifest_path: PathBuf,
    targets: Vec<MetaTarget>,
}

#[derive(Deserialize)]
struct MetaTarget {
    name: String,
    kind: Vec<String>,
    src_path: PathBuf,
    #[serde(default = "yes")]
    test: bool,
}

fn yes() -> bool {
    true
}

/// The targets of `cargo metadata --format-version 1 --no-deps` output, with root paths made relative to
/// `root` (the checkout the command ran in). Targets outside it are left out.
pub fn parse_metadata(json: &str, root: &Path) -> Result<Vec<Target>> {
    let meta: Metadata = serde_json::from_str(json).context("read cargo metadata")?;
    let mut out = Vec::new();
    for package in meta.packages {
        let package_dir = package
            .manifest_path
            .parent()
            .and_then(|d| d.strip_prefix(root).ok())
            .map(slash)
            .unwrap_or_default();
        for t in package.targets {
            let Ok(rel) = t.src_path.strip_prefix(root) else {
                continue;
            };
            out.push(Target {
                package: package.name.clone(),
                name: t.name,
                kind: t.kind,
                src_path: slash(rel),
                package_dir: package_dir.clone(),
                test: t.test,
            });
        }
    }
    Ok(out)
}

/// Runs `cargo metadata` for the checkout of `env` with the test step's environment and sandbox (no network:
/// `--offline`, and `--no-deps` needs no registry), and reads its targets.
pub async fn read_targets(
    step: &Step,
    env: &StepEnv,
    cancel: &CancellationToken,
) -> Result<Vec<Target>> {
    let argv: Vec<String> = [
        "cargo",
        "metadata",
        "--format-version",
        "1",
        "--no-deps",
        "--offline",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let junit = env.junit_path(&step.name, ".metadata");
    let spec = env.spec_in(
        step,
        argv,
        &junit,
        "cargo-metadata",
        Duration::from_secs(120),
        false,
        crate::gate::layered::Phase::Run,
    );
    let outcome = crate::process::run_clean_env(&spec, cancel).await?;
    if !outcome.success() {
        bail!(
            "cargo metadata failed (exit {}): {}",
            outcome
                .exit_code
                .map_or_else(|| "signal".to_owned(), |c| c.to_string()),
            outcome.tail_lines(3)
        );
    }
    let json = std::fs::read_to_string(&spec.stdout_path)
        .with_context(|| format!("read {}", spec.stdout_path.display()))?;
    // cargo names the room where steps see it.
    let room = env.inside_room().to_path_buf();
    let root = std::fs::canonicalize(&room).unwrap_or_else(|_| room.clone());
    let mut targets = parse_metadata(&json, &root)?;
    if targets.is_empty() && root != room {
        targets = parse_metadata(&json, &room)?;
    }
    Ok(targets)
}

/// A file of a target's module tree: which target, and the module path it holds (empty for the root).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleFile {
    pub target: usize,
    pub module: Vec<String>,
}

/// The targets of a repository and the files of each one's module tree.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    pub targets: Vec<Target>,
    /// Every file of every target's module tree, with where it sits (a file can be in several targets).
    pub files: BTreeMap<String, Vec<ModuleFile>>,
}

impl Layout {
    /// The layout of `targets`, reading each file of a tree with `read` (a path relative to the repository
    /// root; None when there is no such file).
    pub fn new(targets: Vec<Target>, read: &dyn Fn(&str) -> Option<String>) -> Layout {
        let mut files: BTreeMap<String, Vec<ModuleFile>> = BTreeMap::new();
        for (i, t) in targets.iter().enumerate() {
            for (path, module) in module_tree(&t.src_path, read) {
                files
                    .entry(path)
                    .or_default()
                    .push(ModuleFile { target: i, module });
            }
        }
        Layout { targets, files }
    }

    /// Where a file sits in the module trees (empty when no target includes it).
    pub fn owners(&self, path: &str) -> &[ModuleFile] {
        self.files.get(path).map(Vec::as_slice).unwrap_or_default()
    }

    /// For a file of a workspace member below the root: its path inside the package (`src/filter/x.rs` for
    /// `tracing-subscriber/src/filter/x.rs`), as cargo's test ids name paths, and the id stems of the
    /// package's targets (`tracing_subscriber@`), which tell its results from other members' `src/lib.rs`.
    pub fn in_member(&self, path: &str) -> Option<(String, Vec<String>)> {
        let member = self
            .targets
            .iter()
            .filter(|t| !t.package_dir.is_empty())
            .filter(|t| {
                path.strip_prefix(t.package_dir.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
            })
            .max_by_key(|t| t.package_dir.len())?;
        let inner = path[member.package_dir.len() + 1..].to_string();
        let stems = self
            .targets
            .iter()
            .filter(|t| t.package == member.package)
            .map(|t| format!("{}@", t.name.replace('-', "_")))
            .collect();
        Some((inner, stems))
    }

    /// The target whose test ids start with `prefix` (`integration@tests/tests.rs`).
    pub fn target_of_prefix(&self, prefix: &str) -> Option<&Target> {
        self.targets.iter().find(|t| t.id_prefix() == prefix)
    }

    /// The module paths of `target` held by files other than the root (`["regression"]`, `["util", "fs"]`).
    pub fn file_modules(&self, target: usize) -> Vec<&[String]> {
        self.files
            .values()
            .flatten()
            .filter(|f| f.target == target && !f.module.is_empty())
            .map(|f| f.module.as_slice())
            .collect()
    }
}

/// The files of the module tree rooted at `root`, each with its module path, root first.
pub fn module_tree(
    root: &str,
    read: &dyn Fn(&str) -> Option<String>,
) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut queue = vec![(root.to_owned(), Vec::new(), true)];
    while let Some((path, module, mod_rs)) = queue.pop() {
        if out.iter().any(|(p, _): &(String, Vec<String>)| *p == path) || out.len() > 10_000 {
            continue;
        }
        let Some(text) = read(&path) else { continue };
        out.push((path.clone(), module.clone()));
        let Ok(file) = syn::parse_file(&text) else {
            continue;
        };
        let dir = parent(&path);
        // Where `mod x;` looks: next to a root or mod.rs, else in the directory named after the file.
        let children = if mod_rs {
            dir.clone()
        } else {
            dir.join(stem(&path))
        };
        declared_mods(
            &file.items,
            &Decl {
                file_dir: &dir,
                children: &children,
                inline: PathBuf::new(),
                module: &module,
            },
            read,
            &mut queue,
        );
    }
    out
}

struct Decl<'a> {
    /// The directory of the file being read.
    file_dir: &'a Path,
    /// Where its (non-inline) child modules are looked for.
    children: &'a Path,
    /// The inline modules around the items, as a relative path.
    inline: PathBuf,
    module: &'a [String],
}

fn declared_mods(
    items: &[Item],
    at: &Decl,
    read: &dyn Fn(&str) -> Option<String>,
    queue: &mut Vec<(String, Vec<String>, bool)>,
) {
    for item in items {
        let Item::Mod(m) = item else { continue };
        let name = m.ident.to_string();
        let mut module = at.module.to_vec();
        module.push(name.clone());
        let path_attr = path_attribute(&m.attrs);
        match &m.content {
            Some((_, inner)) => {
                let inline = match &path_attr {
                    Some(p) => at.inline.join(p),
                    None => at.inline.join(&name),
                };
                declared_mods(
                    inner,
                    &Decl {
                        file_dir: at.file_dir,
                        children: at.children,
                        inline,
                        module: &module,
                    },
                    read,
                    queue,
                );
            }
            None => {
                let found = match path_attr {
                    // Relative to the file's directory outside inline modules, to the inline modules' own
                    // directory inside them. A file named by #[path] owns its directory, like a mod.rs.
                    Some(p) => {
                        let base = if at.inline.as_os_str().is_empty() {
                            at.file_dir.to_path_buf()
                        } else {
                            at.children.join(&at.inline)
                        };
                        Some((normalize(&base.join(p)), true))
                    }
                    None => {
                        let dir = at.children.join(&at.inline);
                        let flat = normalize(&dir.join(format!("{name}.rs")));
                        let nested = normalize(&dir.join(&name).join("mod.rs"));
                        if read(&flat).is_some() {
                            Some((flat, false))
                        } else if read(&nested).is_some() {
                            Some((nested, true))
                        } else {
                            None
                        }
                    }
                };
                if let Some((path, mod_rs)) = found {
                    queue.push((path, module, mod_rs));
                }
            }
        }
    }
}

fn path_attribute(attrs: &[Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| {
        if !a.path().is_ident("path") {
            return None;
        }
        let syn::Meta::NameValue(nv) = &a.meta else {
            return None;
        };
        match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        }
    })
}

fn parent(path: &str) -> PathBuf {
    Path::new(path)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn stem(path: &str) -> String {
    Path::new(path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `a/./b/../c.rs` → `a/c.rs`, `/`-separated.
fn normalize(path: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                parts.pop();
            }
            Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
            _ => {}
        }
    }
    parts.join("/")
}

fn slash(path: &Path) -> String {
    normalize(path)
}

/// A test a Rust test file defines: a test function, or a macro invocation that generates one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestItem {
    /// The test's path inside the file: inline modules, then its name (`["tests", "adds"]`).
    pub path: Vec<String>,
    /// 1-based inclusive lines, attributes included.
    pub start: usize,
    pub end: usize,
}

/// The tests of a Rust test file: `#[test]` functions (and the ones written out in macro invocations) as the
/// gate's Rust parser finds them, and item-level macro invocations whose first argument is an identifier
/// (`rgtest!(r2574, |dir, cmd| { .. })` defines test `r2574`). None if the file does not parse.
pub fn test_items(text: &str) -> Option<Vec<TestItem>> {
    let text = text.replace("\r\n", "\n");
    let file = syn::parse_file(&text).ok()?;
    let mut out: Vec<TestItem> = crate::gate::split::rust_test_functions(&text)?
        .into_iter()
        .map(|f| {
            let mut path = f.module;
            path.push(f.name);
            TestItem {
                path,
                start: *f.lines.start(),
                end: *f.lines.end(),
            }
        })
        .collect();
    macro_tests(&file.items, &mut Vec::new(), &mut out);
    out.sort_by_key(|t| t.start);
    Some(out)
}

fn macro_tests(items: &[Item], module: &mut Vec<String>, out: &mut Vec<TestItem>) {
    for item in items {
        match item {
            Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    module.push(m.ident.to_string());
                    macro_tests(inner, module, out);
                    module.pop();
                }
            }
            Item::Macro(mac) if !mac.mac.path.is_ident("macro_rules") => {
                let mut tokens = mac.mac.tokens.clone().into_iter();
                let first = tokens.next();
                let second = tokens.next();
                let Some(TokenTree::Ident(name)) = first else {
                    continue;
                };
                let separated = match &second {
                    None => true,
                    Some(TokenTree::Punct(p)) => p.as_char() == ',',
                    _ => false,
                };
                let start = mac
                    .attrs
                    .first()
                    .map(|a| a.span().start().line)
                    .unwrap_or_else(|| mac.span().start().line);
                let end = mac.span().end().line;
                let overlaps = out.iter().any(|t| t.start >= start && t.end <= end);
                if separated && !overlaps && !is_keyword(&name.to_string()) {
                    let mut path = module.clone();
                    path.push(name.to_string());
                    out.push(TestItem { path, start, end });
                }
            }
            _ => {}
        }
    }
}

fn is_keyword(word: &str) -> bool {
    matches!(
        word,
        "fn" | "pub" | "struct" | "enum" | "impl" | "mod" | "use" | "const" | "static" | "type"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn files<'a>(list: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |p: &str| {
            list.iter()
                .find(|(path, _)| *path == p)
                .map(|(_, t)| t.to_string())
        }
    }

    fn target(name: &str, kind: &str, src: &str) -> Target {
        Target {
            package: "rg".into(),
            name: name.into(),
            kind: vec![kind.into()],
            src_path: src.into(),
            package_dir: String::new(),
            test: true,
        }
    }

    #[test]
    fn metadata_targets_come_relative_to_the_checkout_with_their_test_flag() {
        let json = r#"{"packages":[{"name":"ripgrep","manifest_path":"/room/Cargo.toml","targets":[
            {"name":"rg","kind":["bin"],"src_path":"/room/crates/core/main.rs","test":true},
            {"name":"integration","kind":["test"],"src_path":"/room/tests/tests.rs","test":true},
            {"name":"nope","kind":["bench"],"src_path":"/room/benches/b.rs","test":false},
            {"name":"elsewhere","kind":["lib"],"src_path":"/other/lib.rs","test":true}
        ]},{"name":"tracing-subscriber","manifest_path":"/room/tracing-subscriber/Cargo.toml","targets":[
            {"name":"layer_filters","kind":["test"],"src_path":"/room/tracing-subscriber/tests/layer_filters/main.rs"}
        ]}],"workspace_root":"/room"}"#;
        let got = parse_metadata(json, Path::new("/room")).unwrap();
        assert_eq!(
            got.iter()
                .map(|t| (t.name.as_str(), t.src_path.as_str(), t.test))
                .collect::<Vec<_>>(),
            vec![
                ("rg", "crates/core/main.rs", true),
                ("integration", "tests/tests.rs", true),
                ("nope", "benches/b.rs", false),
                (
                    "layer_filters",
                    "tracing-subscriber/tests/layer_filters/main.rs",
                    true
                ),
            ]
        );
        assert_eq!(got[1].id_prefix(), "integration@tests/tests.rs");
        // A member's ids name the root as cargo prints it: relative to the package (`Running
        // tests/layer_filters/main.rs (..)` in tracing's workspace).
        assert_eq!(got[3].package_dir, "tracing-subscriber");
        assert_eq!(
            got[3].id_prefix(),
            "layer_filters@tests/layer_filters/main.rs"
        );
        assert_eq!(got[1].selector(), vec!["--test", "integration"]);
        assert!(got[1].is_test_binary() && !got[0].is_test_binary());
    }

    #[test]
    fn the_module_tree_follows_mod_declarations_mod_rs_dirs_and_path_attributes() {
        let tree = [
            (
                "tests/tests.rs",
                "#[macro_use]\nmod macros;\nmod regression;\nmod util;\n#[path = \"extra/odd_name.rs\"]\nmod odd;\nmod inline { mod deep; }\n",
            ),
            ("tests/macros.rs", "macro_rules! rgtest { () => {} }\n"),
            ("tests/regression.rs", "mod sub;\n"),
            ("tests/regression/sub.rs", "\n"),
            ("tests/util/mod.rs", "mod fs;\n"),
            ("tests/util/fs.rs", "\n"),
            ("tests/extra/odd_name.rs", "mod child;\n"),
            ("tests/extra/child.rs", "\n"),
            ("tests/inline/deep.rs", "\n"),
            ("tests/orphan.rs", "\n"),
        ];
        let mut got = module_tree("tests/tests.rs", &files(&tree));
        got.sort();
        let want: Vec<(String, Vec<String>)> = [
            ("tests/extra/child.rs", "odd::child"),
            ("tests/extra/odd_name.rs", "odd"),
            ("tests/inline/deep.rs", "inline::deep"),
            ("tests/macros.rs", "macros"),
            ("tests/regression.rs", "regression"),
            ("tests/regression/sub.rs", "regression::sub"),
            ("tests/tests.rs", ""),
            ("tests/util/fs.rs", "util::fs"),
            ("tests/util/mod.rs", "util"),
        ]
        .iter()
        .map(|(p, m)| {
            let module = if m.is_empty() {
                Vec::new()
            } else {
                m.split("::").map(str::to_owned).collect()
            };
            (p.to_string(), module)
        })
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_layout_knows_which_target_and_module_a_file_belongs_to() {
        let tree = [
            ("tests/tests.rs", "mod regression;\n"),
            ("tests/regression.rs", "\n"),
            ("src/lib.rs", "mod a;\n"),
            ("src/a.rs", "\n"),
        ];
        let layout = Layout::new(
            vec![
                target("rgl", "lib", "src/lib.rs"),
                target("integration", "test", "tests/tests.rs"),
            ],
            &files(&tree),
        );
        assert_eq!(
            layout.owners("tests/regression.rs"),
            &[ModuleFile {
                target: 1,
                module: vec!["regression".into()]
            }]
        );
        assert_eq!(layout.owners("tests/orphan.rs"), &[]);
        assert_eq!(
            layout.file_modules(1),
            vec![&["regression".to_string()][..]]
        );
        assert_eq!(
            layout
                .target_of_prefix("integration@tests/tests.rs")
                .map(|t| t.name.as_str()),
            Some("integration")
        );
    }

    #[test]
    fn macro_invocations_with_a_leading_identifier_name_tests_beside_test_functions() {
        let text = "use crate::util::Dir;\n\nrgtest!(r2574, |dir: Dir, cmd| {\n    cmd.arg(\"x\");\n});\n\n#[test]\nfn plain() {\n    assert!(true);\n}\n\nmod inner {\n    rgtest!(r1, |_, _| {});\n}\n\nmacro_rules! local { () => {} }\nlazy_static! { static ref X: u8 = 1; }\nproptest! {\n    #[test]\n    fn prop(x in 0..3u8) { assert!(x < 3); }\n}\n";
        let got = test_items(text).unwrap();
        assert_eq!(
            got.iter()
                .map(|t| (t.path.join("::"), t.start, t.end))
                .collect::<Vec<_>>(),
            vec![
                ("r2574".to_string(), 3, 5),
                ("plain".to_string(), 7, 10),
                ("inner::r1".to_string(), 13, 13),
                ("prop".to_string(), 19, 20),
            ]
        );
        assert_eq!(test_items("fn broken( {"), None);
    }
}
