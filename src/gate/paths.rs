//! What a changed path is (test, production, generated, docs, other) and whether a change may touch it, by the
//! patterns of a profile's `[paths]` table.
//!
//! Patterns are compiled once, when the profile is read: a [`PathMatcher`] deserializes from its list of
//! patterns (a bad glob is a load error naming its key) and serializes back to it, so a profile printed as
//! TOML loads again. A pattern without `/` matches a file name anywhere; one ending in `/` matches a directory
//! anywhere; any other is a glob on the whole path from the repository root (`**` crosses directories).

use anyhow::{Context, Result};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The `[paths]` table: pattern lists, compiled.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Paths {
    #[serde(default)]
    pub test: PathMatcher,
    /// Production code; empty means every path that is not test, generated or docs.
    #[serde(default)]
    pub production: PathMatcher,
    #[serde(default)]
    pub generated: PathMatcher,
    #[serde(default)]
    pub docs: PathMatcher,
    /// If not empty, a change may only touch paths matching one of these.
    #[serde(default)]
    pub allow: PathMatcher,
    /// A change may not touch paths matching any of these.
    #[serde(default)]
    pub deny: PathMatcher,
}

/// Matches repository paths against profile patterns; compiled once, compared and printed by its patterns.
#[derive(Clone, Debug)]
pub struct PathMatcher {
    patterns: Vec<String>,
    set: GlobSet,
}

impl PathMatcher {
    pub fn new(patterns: &[String]) -> Result<PathMatcher> {
        let mut b = GlobSetBuilder::new();
        for pat in patterns {
            for glob in expand_pattern(pat) {
                b.add(
                    GlobBuilder::new(&glob)
                        .literal_separator(true)
                        .build()
                        .with_context(|| format!("bad pattern `{pat}`"))?,
                );
            }
        }
        Ok(PathMatcher {
            patterns: patterns.to_vec(),
            set: b.build()?,
        })
    }

    pub fn is_match(&self, path: &str) -> bool {
        !self.patterns.is_empty() && self.set.is_match(path)
    }

    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// The patterns as written.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// This matcher with `more` patterns; itself (not compiled again) when there are none.
    pub fn with(&self, more: &[String]) -> Result<PathMatcher> {
        if more.is_empty() {
            return Ok(self.clone());
        }
        PathMatcher::new(&[self.patterns.as_slice(), more].concat())
    }
}

impl Default for PathMatcher {
    fn default() -> Self {
        PathMatcher {
            patterns: Vec::new(),
            set: GlobSet::empty(),
        }
    }
}

impl PartialEq for PathMatcher {
    fn eq(&self, other: &Self) -> bool {
        self.patterns == other.patterns
    }
}

impl Eq for PathMatcher {}

impl Serialize for PathMatcher {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.patterns.serialize(s)
    }
}

impl<'de> Deserialize<'de> for PathMatcher {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let patterns = Vec::<String>::deserialize(d)?;
        PathMatcher::new(&patterns).map_err(|e| serde::de::Error::custom(format!("{e:#}")))
    }
}

fn expand_pattern(pat: &str) -> Vec<String> {
    let pat = pat.trim_start_matches("./");
    if let Some(dir) = pat.strip_suffix('/') {
        if dir.contains('/') {
            vec![format!("{dir}/**")]
        } else {
            vec![format!("{dir}/**"), format!("**/{dir}/**")]
        }
    } else if !pat.contains('/') {
        vec![pat.to_owned(), format!("**/{pat}")]
    } else {
        vec![pat.to_owned()]
    }
}

/// What a changed path is, by the profile's patterns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PathClass {
    Test,
    Production,
    Generated,
    Docs,
    Other,
}

/// The profile's path classes, and the scope a change must stay in (the profile's `allow` and `deny` with
/// those of the command line added).
#[derive(Clone, Debug)]
pub struct Classifier {
    paths: Paths,
    pub allow: PathMatcher,
    pub deny: PathMatcher,
}

impl Classifier {
    /// The classes of `paths`; only the extra scope patterns are compiled here.
    pub fn new(paths: &Paths, extra_allow: &[String], extra_deny: &[String]) -> Result<Classifier> {
        Ok(Classifier {
            allow: paths.allow.with(extra_allow)?,
            deny: paths.deny.with(extra_deny)?,
            paths: paths.clone(),
        })
    }

    /// Generated wins over test, test over docs; production is explicit or everything left.
    pub fn classify(&self, path: &str) -> PathClass {
        let p = &self.paths;
        if p.generated.is_match(path) {
            PathClass::Generated
        } else if p.test.is_match(path) {
            PathClass::Test
        } else if p.docs.is_match(path) {
            PathClass::Docs
        } else if p.production.is_empty() || p.production.is_match(path) {
            PathClass::Production
        } else {
            PathClass::Other
        }
    }

    pub fn is_test(&self, path: &str) -> bool {
        self.classify(path) == PathClass::Test
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::profile::Profile;

    fn own(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn patterns_match_names_anywhere_directories_anywhere_and_rooted_globs() {
        let go = Profile::preset("go").unwrap();
        let c = Classifier::new(&go.paths, &[], &[]).unwrap();
        assert_eq!(c.classify("calc_test.go"), PathClass::Test);
        assert_eq!(c.classify("pkg/calc/calc_test.go"), PathClass::Test);
        assert_eq!(c.classify("pkg/calc/testdata/in.txt"), PathClass::Test);
        assert_eq!(c.classify("pkg/calc/calc.go"), PathClass::Production);
        assert_eq!(c.classify("README.md"), PathClass::Docs);
        assert_eq!(
            c.classify("api/zz_generated.deepcopy.go"),
            PathClass::Generated
        );
        let rooted = PathMatcher::new(&["src/**/*.rs".into()]).unwrap();
        assert!(rooted.is_match("src/a/b.rs"));
        assert!(!rooted.is_match("x/src/a.rs"));
    }

    #[test]
    fn the_python_preset_knows_tests_and_conftest() {
        let p = Profile::preset("python").unwrap();
        let c = Classifier::new(&p.paths, &[], &[]).unwrap();
        for t in [
            "tests/test_a.py",
            "pkg/test_b.py",
            "pkg/b_test.py",
            "conftest.py",
            "tests/helpers.py",
        ] {
            assert_eq!(c.classify(t), PathClass::Test, "{t}");
        }
        assert_eq!(c.classify("pkg/b.py"), PathClass::Production);
        assert_eq!(c.classify("CHANGELOG.md"), PathClass::Docs);
    }

    #[test]
    fn the_command_line_scope_adds_to_the_profiles_own() {
        let paths: Paths = toml::from_str("allow = [\"src/\"]\ndeny = [\"*.lock\"]\n").unwrap();
        let c = Classifier::new(&paths, &own(&["docs/"]), &own(&["secret.txt"])).unwrap();
        assert!(c.allow.is_match("src/a.rs") && c.allow.is_match("docs/x.md"));
        assert!(!c.allow.is_match("build.rs"));
        assert!(c.deny.is_match("Cargo.lock") && c.deny.is_match("a/secret.txt"));
        let same = Classifier::new(&paths, &[], &[]).unwrap();
        assert_eq!(same.allow, paths.allow);
        assert!(!same.deny.is_match("secret.txt"));
    }

    #[test]
    fn an_empty_matcher_matches_nothing_and_a_matcher_prints_as_its_patterns() {
        let empty = PathMatcher::default();
        assert!(empty.is_empty() && !empty.is_match("a"));
        let m = PathMatcher::new(&own(&["tests/", "*_test.go"])).unwrap();
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            serde_json::json!(["tests/", "*_test.go"])
        );
        let back: PathMatcher =
            serde_json::from_value(serde_json::json!(["tests/", "*_test.go"])).unwrap();
        assert_eq!(back, m);
        assert!(back.is_match("x/tests/a.py"));
    }

    #[test]
    fn a_bad_glob_is_a_deserialization_error_naming_the_pattern() {
        let err =
            serde_json::from_value::<PathMatcher>(serde_json::json!(["ok", "a[b"])).unwrap_err();
        assert!(err.to_string().contains("bad pattern `a[b`"), "{err}");
    }
}
