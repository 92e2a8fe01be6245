//! Everything the gate decides before any step runs, read from the user's repository only.
//!
//! The revisions (head, and base as given or the merge base with the default branch), the profile that judges
//! the change (`--profile`, else the repository's own as of base, else detection), the changed paths classified
//! by that profile (Rust files with both test and production hunks split), the claimed verdict (flag or
//! `Agent-Verdict:` trailer) and the key under which this repository's rooms and caches live. Nothing here
//! writes anywhere, so a usage error (a bad revision, an unknown project) is reported before a room exists.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;
use git2::{Oid, Repository};
use sha2::{Digest, Sha256};

use crate::error::VouchError;
use crate::gate::outcome::Claim;
use crate::gate::paths::{Classifier, PathClass};
use crate::gate::profile::{self, Profile, REPO_PROFILE};
use crate::gate::report::{ChangedFile, Rev};
use crate::gate::split;
use crate::gate::testmap::{self, Collected, GitTree, Sources};
use crate::git::{Change, ChangeKind};
use crate::sandbox::{Sandbox, SandboxMode};

/// How many times a test failing at head is rerun alone before it is blamed, unless `--reruns` says.
pub const DEFAULT_RERUNS: u32 = 1;

/// What the user asked of the gate.
#[derive(Clone, Debug)]
pub struct Options {
    pub repo: PathBuf,
    pub base: Option<String>,
    pub head: String,
    pub profile: Option<String>,
    pub claimed: Option<Claim>,
    pub keep: bool,
    pub strict_baseline: bool,
    pub no_flaky: bool,
    pub reruns: u32,
    pub allow_no_tests: bool,
    pub allow: Vec<String>,
    pub deny: Vec<String>,
    pub no_baseline: bool,
    pub refresh_baseline: bool,
    pub no_bite: bool,
    /// Overrides of the profile's bite policy.
    pub bite_require: Option<profile::BiteRequire>,
    pub bite_build_failure: Option<profile::BuildFailure>,
    pub bite_hunks: Option<profile::HunkPolicy>,
    pub allow_removed_tests: bool,
    pub fresh_rooms: bool,
    /// Whether steps run confined (`--sandbox`).
    pub sandbox: SandboxMode,
    /// Where `--keep` puts rooms (`workspaces/` of the current directory by default).
    pub workspaces: PathBuf,
    /// The cache root (`$VOUCH_CACHE`, else the user cache dir).
    pub cache: PathBuf,
}

impl Options {
    /// Options with defaults for a repository (used by tests and by `vouch run`).
    pub fn for_repo(repo: &Path) -> Options {
        Options {
            repo: repo.to_path_buf(),
            base: None,
            head: "HEAD".into(),
            profile: None,
            claimed: None,
            keep: false,
            strict_baseline: false,
            no_flaky: false,
            reruns: DEFAULT_RERUNS,
            allow_no_tests: false,
            allow: Vec::new(),
            deny: Vec::new(),
            no_baseline: false,
            refresh_baseline: false,
            no_bite: false,
            bite_require: None,
            bite_build_failure: None,
            bite_hunks: None,
            allow_removed_tests: false,
            fresh_rooms: false,
            sandbox: SandboxMode::Auto,
            workspaces: PathBuf::from("workspaces"),
            cache: default_cache_dir(),
        }
    }
}

/// `$VOUCH_CACHE`, else `<user cache dir>/vouch`, else a directory under the system temp dir.
pub fn default_cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("VOUCH_CACHE").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    dirs::cache_dir()
        .map(|d| d.join("vouch"))
        .unwrap_or_else(|| std::env::temp_dir().join("vouch-cache"))
}

/// Everything decided before any step runs.
pub struct Prepared {
    pub objects: PathBuf,
    pub repo_key: String,
    pub base: Rev,
    pub head: Rev,
    pub base_tree: String,
    pub profile: Profile,
    pub profile_source: String,
    /// The profile's path classes with the scope of `--allow` and `--deny` added.
    pub classifier: Classifier,
    pub changes: Vec<ChangedFile>,
    pub claimed: Option<Claim>,
    pub notes: Vec<String>,
    /// The head tree has files the profile calls tests.
    pub tree_has_tests: bool,
    /// Files with both test and production changes (Rust inline tests): base plus only the test hunks.
    pub mixed: BTreeMap<String, String>,
    /// What confines the steps.
    pub sandbox: Sandbox,
}

/// Resolves revisions and the profile, and classifies the change. Reads the repository only.
pub fn prepare(opts: &Options) -> Result<Prepared> {
    let sandbox = Sandbox::new(opts.sandbox).map_err(|e| {
        VouchError::infra_hint(
            e.to_string(),
            "install bubblewrap (Debian: apt-get install bubblewrap) and allow unprivileged user namespaces, or pass --sandbox auto",
        )
    })?;
    // Before any step runs: a sandbox that lets a write or a connect through, or runs nothing, judges nothing.
    sandbox.prove()?;
    let repo = crate::git::open(&opts.repo)?;
    let head = crate::git::resolve(&repo, &opts.head)?;
    let (base, base_label) = base_of(&repo, opts, head)?;
    if base == head {
        return Err(VouchError::usage_hint(
            format!("base and head are the same commit ({head}): there is no change to judge"),
            "pass --base REV for the commit the change starts from, or --head for the change",
        )
        .into());
    }
    let mut notes = Vec::new();
    let head_paths = crate::git::tree_paths(&repo, head)?;
    let (profile, profile_source) = choose_profile(opts, &repo, base, &head_paths)?;
    let changes = crate::git::changes(&repo, base, head)?;
    if changes.iter().any(|c| c.path == REPO_PROFILE) && opts.profile.is_none() {
        notes.push(format!(
            "the change edits {REPO_PROFILE}; it was judged with the profile as of base"
        ));
    }
    let classifier = Classifier::new(&profile.paths, &opts.allow, &opts.deny)?;
    let (mut files, mixed) = classify_changes(&repo, base, head, &changes, &classifier);
    let head_tree = GitTree::new(&repo, &head.to_string())?;
    notes.extend(mark_collected(&profile, &mut files, &head_tree));
    let tree_has_tests = head_paths.iter().any(|p| classifier.is_test(p));
    let claimed = match opts.claimed {
        Some(c) => Some(c),
        None => {
            let (claim, note) = trailer_claim(&crate::git::message(&repo, head)?);
            notes.extend(note);
            claim
        }
    };
    let objects = crate::git::objects_dir(&repo);
    let repo_key = repo_key(
        &repo
            .commondir()
            .canonicalize()
            .unwrap_or_else(|_| repo.commondir().to_path_buf()),
        &identity(&repo, head),
    );
    Ok(Prepared {
        objects,
        repo_key,
        base: Rev {
            rev: base_label,
            sha: base.to_string(),
        },
        head: Rev {
            rev: opts.head.clone(),
            sha: head.to_string(),
        },
        base_tree: crate::git::tree_id(&repo, base)?.to_string(),
        profile,
        profile_source,
        classifier,
        changes: files,
        claimed,
        notes,
        tree_has_tests,
        mixed,
        sandbox,
    })
}

/// Base as given (`--base`), else the merge base of head with the default branch; and how it was chosen.
fn base_of(repo: &Repository, opts: &Options, head: Oid) -> Result<(Oid, String)> {
    match &opts.base {
        Some(rev) => Ok((crate::git::resolve(repo, rev)?, rev.clone())),
        None => {
            let (base, branch) = crate::git::default_base(repo, head)?;
            Ok((base, format!("merge-base with {branch}")))
        }
    }
}

/// The revisions as far as they resolve, for the report of a gate that could not judge (a bad revision, a
/// missing tool): a revision that does not resolve keeps what the user asked for and an empty sha.
pub fn known_revisions(opts: &Options) -> (Rev, Rev) {
    let mut base = Rev {
        rev: opts
            .base
            .clone()
            .unwrap_or_else(|| "merge-base with the default branch".into()),
        sha: String::new(),
    };
    let mut head = Rev {
        rev: opts.head.clone(),
        sha: String::new(),
    };
    let Ok(repo) = crate::git::open(&opts.repo) else {
        return (base, head);
    };
    if let Ok(head_id) = crate::git::resolve(&repo, &opts.head) {
        head.sha = head_id.to_string();
        if let Ok((base_id, label)) = base_of(&repo, opts, head_id) {
            base = Rev {
                rev: label,
                sha: base_id.to_string(),
            };
        }
    } else if let Some(rev) = &opts.base {
        if let Ok(base_id) = crate::git::resolve(&repo, rev) {
            base.sha = base_id.to_string();
        }
    }
    (base, head)
}

/// The profile that judges the change and where it came from: `--profile`, else the repository's own as of
/// base (so a change cannot loosen its own gate), else the preset whose marker base (or head) has at its root.
fn choose_profile(
    opts: &Options,
    repo: &Repository,
    base: Oid,
    head_paths: &[String],
) -> Result<(Profile, String)> {
    if let Some(arg) = &opts.profile {
        return Ok((Profile::from_arg(arg)?, format!("--profile {arg}")));
    }
    if let Some(text) = crate::git::file_text(repo, base, REPO_PROFILE) {
        let origin = format!("{REPO_PROFILE} at base");
        return Ok((Profile::from_toml(&text, &origin)?, origin));
    }
    let base_paths = crate::git::tree_paths(repo, base)?;
    let roots = |paths: &[String]| -> Vec<String> {
        paths.iter().filter(|p| !p.contains('/')).cloned().collect()
    };
    let detected = Profile::detect(&roots(&base_paths))
        .or_else(|| Profile::detect(&roots(head_paths)))
        .ok_or_else(|| {
            VouchError::usage_hint(
                "cannot tell what kind of project this is (no Cargo.toml, go.mod, pyproject.toml, setup.cfg, setup.py or package.json at the root)",
                format!("pass --profile with a preset (rust, go, python, node) or a profile file, or commit one as {REPO_PROFILE}"),
            )
        })?;
    let source = format!("detected from {}", detected.detect.join(" / "));
    Ok((detected, source))
}

/// The changed files with their classes; a production file whose test regions changed too is split: a file
/// with only test hunks counts as a test, one with both is `mixed` (base plus its test hunks kept for the
/// bite check).
fn classify_changes(
    repo: &Repository,
    base: Oid,
    head: Oid,
    changes: &[Change],
    classifier: &Classifier,
) -> (Vec<ChangedFile>, BTreeMap<String, String>) {
    let mut files = Vec::new();
    let mut mixed = BTreeMap::new();
    for c in changes {
        let mut class = classifier.classify(&c.path);
        let mut detail = None;
        let splittable = class == PathClass::Production
            && matches!(c.kind, ChangeKind::Modified | ChangeKind::Added);
        if let Some(finder) = split::regions_for(&c.path).filter(|_| splittable) {
            let old = match c.kind {
                ChangeKind::Added => Some(String::new()),
                _ => crate::git::file_text(repo, base, &c.path),
            };
            let new = crate::git::file_text(repo, head, &c.path);
            if let (Some(old), Some(new)) = (old, new) {
                match split::split(finder, &old, &new) {
                    Some(s) if s.test_changed && !s.production_changed => {
                        class = PathClass::Test;
                        detail = Some(s.summary);
                    }
                    Some(s) if s.test_changed => {
                        detail = Some(s.summary);
                        mixed.insert(c.path.clone(), s.test_only);
                    }
                    Some(_) => {}
                    None => detail = Some("could not be parsed: treated as production".into()),
                }
            }
        }
        files.push(ChangedFile {
            path: c.path.clone(),
            old_path: c.old_path.clone(),
            class,
            change: c.kind.clone(),
            mixed: mixed.contains_key(&c.path),
            detail,
            collected: None,
        });
    }
    (files, mixed)
}

/// Marks each new test file with whether a test step of the profile collects it, and notes the ones none
/// does: their tests never run, so they are no test change (the test-presence rule) and prove nothing.
fn mark_collected(profile: &Profile, files: &mut [ChangedFile], tree: &dyn Sources) -> Vec<String> {
    let mut notes = Vec::new();
    for f in files.iter_mut().filter(|f| {
        f.class == PathClass::Test && matches!(f.change, ChangeKind::Added | ChangeKind::Renamed)
    }) {
        let answers: Vec<Collected> = profile
            .test_steps()
            .map(|s| testmap::collected(s.runner(), &s.raw_argv(), &f.path, tree))
            .filter(|c| *c != Collected::Unknown)
            .collect();
        if answers.is_empty() {
            continue;
        }
        let why: Vec<&str> = answers
            .iter()
            .filter_map(|c| match c {
                Collected::No(why) => Some(why.as_str()),
                _ => None,
            })
            .collect();
        if why.len() < answers.len() {
            f.collected = Some(true);
        } else {
            f.collected = Some(false);
            notes.push(format!(
                "{} is not collected by the test command ({}): its tests never run and count as no test change",
                f.path,
                why.join("; ")
            ));
        }
    }
    notes
}

/// The claim of a head commit's `Agent-Verdict:` trailer, and a note when the trailer says something else.
fn trailer_claim(message: &str) -> (Option<Claim>, Option<String>) {
    match crate::git::trailer(message, "Agent-Verdict") {
        Some(v) => match Claim::from_trailer(&v) {
            Some(c) => (Some(c), None),
            None => (
                None,
                Some(format!(
                    "ignored Agent-Verdict trailer `{v}` (expected GO or NO-GO)"
                )),
            ),
        },
        None => (None, None),
    }
}

/// The key of a repository's rooms, caches and logs: a short hash of its (canonical) git directory and its
/// [`identity`]. The path alone is not enough: a repository deleted and made again at the same path (the quick
/// start's example does that) is another repository, whose rooms must not start from the old one's commits.
fn repo_key(git_dir: &Path, identity: &str) -> String {
    let mut h = Sha256::new();
    h.update(git_dir.to_string_lossy().as_bytes());
    h.update([0]);
    h.update(identity.as_bytes());
    hex::encode(&h.finalize()[..8])
}

/// What tells a repository from another at the same path: the root commit of head's first-parent history.
/// It stays while the repository lives (every branch of a project shares it, fresh clones too, so their rooms
/// and build caches are reused) and differs when the repository is made again with other commits. A history
/// that cannot be walked (objects missing) gives the oldest commit reached; a shallow clone, its boundary.
fn identity(repo: &Repository, head: Oid) -> String {
    let mut oldest = head;
    if let Ok(mut walk) = repo.revwalk() {
        let walked = walk.push(head).and_then(|()| walk.simplify_first_parent());
        if walked.is_ok() {
            for id in walk.map_while(|id| id.ok()) {
                oldest = id;
            }
        }
    }
    oldest.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repo_key_is_sixteen_hex_digits_stable_per_directory_and_identity() {
        let a = repo_key(Path::new("/srv/a/.git"), "root1");
        assert_eq!(a.len(), 16);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()), "{a}");
        assert_eq!(a, repo_key(Path::new("/srv/a/.git"), "root1"));
        assert_ne!(a, repo_key(Path::new("/srv/b/.git"), "root1"));
        assert_ne!(a, repo_key(Path::new("/srv/a/.git"), "root2"));
    }

    /// A repository in a temporary directory with commits of the given messages, one after the other.
    fn history(messages: &[&str]) -> (tempfile::TempDir, Repository, Vec<Oid>) {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let sig = git2::Signature::new("t", "t@example.com", &git2::Time::new(0, 0)).unwrap();
        let tree = {
            let id = repo.treebuilder(None).unwrap().write().unwrap();
            repo.find_tree(id).unwrap()
        };
        let mut ids: Vec<Oid> = Vec::new();
        for m in messages {
            let parent = ids.last().map(|id| repo.find_commit(*id).unwrap());
            let parents: Vec<&git2::Commit> = parent.iter().collect();
            ids.push(repo.commit(None, &sig, &sig, m, &tree, &parents).unwrap());
        }
        drop(tree);
        (dir, repo, ids)
    }

    #[test]
    fn the_identity_is_the_root_commit_whatever_the_head() {
        let (_dir, repo, ids) = history(&["root", "two", "three"]);
        assert_eq!(identity(&repo, ids[2]), ids[0].to_string());
        assert_eq!(identity(&repo, ids[1]), ids[0].to_string());
        assert_eq!(identity(&repo, ids[0]), ids[0].to_string());
        let (_other, other, other_ids) = history(&["another root", "two", "three"]);
        assert_ne!(identity(&other, other_ids[2]), identity(&repo, ids[2]));
    }

    #[test]
    fn a_trailer_claims_go_or_no_go_and_anything_else_is_noted_and_ignored() {
        assert_eq!(
            trailer_claim("fix\n\nAgent-Verdict: GO\n"),
            (Some(Claim::Go), None)
        );
        assert_eq!(
            trailer_claim("fix\n\nAgent-Verdict: no-go\n"),
            (Some(Claim::NoGo), None)
        );
        assert_eq!(trailer_claim("fix\n"), (None, None));
        let (claim, note) = trailer_claim("fix\n\nAgent-Verdict: maybe\n");
        assert_eq!(claim, None);
        assert_eq!(
            note.as_deref(),
            Some("ignored Agent-Verdict trailer `maybe` (expected GO or NO-GO)")
        );
    }
}
