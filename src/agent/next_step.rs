//! The step a small model most often skips after a fix: a regression test. Real 1.5B runs applied the right
//! fix and then retried it, read files or rewrote it until the turns ran out, without writing a test or
//! running the tests once, and the gate had nothing to prove the fix with. So the result of a change to
//! production code says what comes next, until the run's changes hold a test.
//!
//! Whether a change holds a test is read from its path (the profile's test patterns) and from the text it
//! wrote (a test function's mark in any of the languages the profiles know). It only decides whether the
//! model gets a reminder; the gate's bite check is what judges the test.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::gate::paths::Classifier;

/// Appended to the result of a change to production code while the run has no test.
pub const ADD_A_TEST: &str =
    "Next: add a regression test that fails without this change (the issue's \
symptom as an assertion) next to the existing tests, then call run_tests.";

/// A test function's mark: Rust, Python, Go, JavaScript and TypeScript.
static TEST_MARK: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r#"(?m)#\[(?:[\w:]+::)?test\b|^\s*(?:async\s+)?def\s+test\w*\s*\(|\bfunc\s+Test\w*\s*\(|(?:^|[^\w.])(?:it|test|describe)\s*\(\s*['"`]"#,
    )
    .ok()
});

/// Whether `text` holds a test function's mark in any of the profiles' languages.
pub fn has_test_mark(text: &str) -> bool {
    TEST_MARK.as_ref().is_some_and(|re| re.is_match(text))
}

/// Whether the run's changes hold a test yet.
pub struct TestWatch {
    classifier: Option<Classifier>,
    has_test: bool,
}

impl TestWatch {
    /// `classifier`: the profile's path classes, if a profile matched. A resumed run starts as if it had
    /// a test: what the earlier run wrote is not known here, and a wrong reminder is worse than none.
    pub fn new(classifier: Option<Classifier>, resumed: bool) -> TestWatch {
        TestWatch {
            classifier,
            has_test: resumed,
        }
    }

    /// After `name` (a tool that changes files) succeeded with `args`: the reminder to add a test, if the
    /// change went to production code and the run has no test yet.
    pub fn after_change(&mut self, name: &str, args: &Value) -> Option<&'static str> {
        let args = match args {
            Value::String(raw) => serde_json::from_str(raw).ok()?,
            other => other.clone(),
        };
        let path = args.get("path")?.as_str()?;
        let text = match name {
            "edit" => args.get("new_string")?.as_str()?,
            "write_file" => args.get("content")?.as_str()?,
            _ => return None,
        };
        let test_path = self
            .classifier
            .as_ref()
            .is_some_and(|c| c.is_test(path.trim_start_matches("./")));
        if test_path || TEST_MARK.as_ref().is_some_and(|re| re.is_match(text)) {
            self.has_test = true;
        }
        (!self.has_test).then_some(ADD_A_TEST)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::gate::profile::Profile;

    fn watch(profile: &str) -> TestWatch {
        let p = Profile::preset(profile).unwrap();
        TestWatch::new(Some(Classifier::new(&p.paths, &[], &[]).unwrap()), false)
    }

    fn edit(path: &str, new: &str) -> Value {
        json!({"path": path, "old_string": "x", "new_string": new})
    }

    #[test]
    fn a_production_fix_is_reminded_until_a_test_is_written() {
        let mut w = watch("rust");
        let fix = edit("src/lib.rs", "s.split_whitespace().count()");
        assert_eq!(w.after_change("edit", &fix), Some(ADD_A_TEST));
        // The arguments as the server sent them, a JSON string.
        let raw = Value::String(fix.to_string());
        assert_eq!(w.after_change("edit", &raw), Some(ADD_A_TEST));
        // An inline test module in the same file counts.
        let test = edit(
            "src/lib.rs",
            "#[cfg(test)]\nmod tests {\n    #[test]\n    fn two_spaces() {}\n}\n",
        );
        assert_eq!(w.after_change("edit", &test), None);
        assert_eq!(w.after_change("edit", &fix), None);
    }

    #[test]
    fn a_test_is_seen_by_its_path_or_its_mark_in_each_language() {
        let mut w = watch("python");
        let body = json!({"path": "tests/test_calc.py", "content": "from calc import add\n"});
        assert_eq!(w.after_change("write_file", &body), None);
        for (profile, path, text) in [
            (
                "python",
                "calc.py",
                "def test_add():\n    assert add(2, 3) == 5\n",
            ),
            ("go", "calc.go", "func TestAdd(t *testing.T) {}\n"),
            ("rust", "src/lib.rs", "#[tokio::test]\nasync fn f() {}\n"),
            ("node", "src/calc.ts", "test('adds', () => {});\n"),
            (
                "node",
                "src/calc.js",
                "describe(\"calc\", () => {\n  it('adds', () => {});\n});\n",
            ),
        ] {
            let mut w = watch(profile);
            assert_eq!(
                w.after_change("edit", &edit(path, text)),
                None,
                "{path}: {text}"
            );
        }
        // Words that only look like a test are production code.
        for text in [
            "let test = attest(x);",
            "fn retest() {}",
            "self.test(value)",
            "def testing",
        ] {
            let mut w = watch("rust");
            assert_eq!(
                w.after_change("edit", &edit("src/lib.rs", text)),
                Some(ADD_A_TEST),
                "{text}"
            );
        }
    }

    #[test]
    fn a_resumed_run_or_another_tool_gets_no_reminder() {
        let mut w = TestWatch::new(None, true);
        assert_eq!(w.after_change("edit", &edit("src/lib.rs", "fix")), None);
        let mut w = TestWatch::new(None, false);
        assert_eq!(
            w.after_change("read_file", &json!({"path": "src/lib.rs"})),
            None
        );
        assert_eq!(
            w.after_change("edit", &edit("src/lib.rs", "fix")),
            Some(ADD_A_TEST)
        );
    }
}
