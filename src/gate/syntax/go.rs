//! Go tests as `go test` finds them: top-level functions `TestXxx`, `BenchmarkXxx`, `FuzzXxx` and
//! `ExampleXxx` (the next letter not lower case), keyed by their name; `TestMain` runs the others and is not
//! one. Subtests and table rows live inside their function, so a changed row changes that function's text.

use std::collections::HashSet;

use tree_sitter::Node;

use super::{each_node, named_children, text, Found};

/// Whether `go test` runs a function of this name.
fn is_test_name(name: &str) -> bool {
    if name == "TestMain" {
        return false;
    }
    ["Test", "Benchmark", "Fuzz", "Example"].iter().any(|p| {
        name.strip_prefix(p)
            .is_some_and(|rest| !rest.starts_with(|c: char| c.is_lowercase()))
    })
}

pub(super) fn tests<'t>(root: Node<'t>, src: &[u8]) -> Vec<Found<'t>> {
    named_children(root)
        .into_iter()
        .filter(|n| n.kind() == "function_declaration")
        .filter_map(|n| {
            let name = text(n.child_by_field_name("name")?, src);
            is_test_name(name).then(|| Found {
                node: n,
                key: name.to_owned(),
                name: name.to_owned(),
                extra_skips: 0,
            })
        })
        .collect()
}

/// Assertions (`t.Error*`, `t.Fatal*`, `t.Fail*` on a `testing` parameter, testify's `assert.`/`require.`) and
/// skips (`t.Skip*`) in a test function.
pub(super) fn counts(node: Node, src: &[u8]) -> (usize, usize) {
    // The names of the parameters of type *testing.T, *testing.B, *testing.F or testing.TB (subtests too).
    let mut testing = HashSet::new();
    each_node(node, |n| {
        if n.kind() == "parameter_declaration"
            && n.child_by_field_name("type")
                .is_some_and(|t| text(t, src).contains("testing."))
        {
            for name in named_children(n)
                .into_iter()
                .filter(|c| c.kind() == "identifier")
            {
                testing.insert(text(name, src).to_owned());
            }
        }
        true
    });
    let (mut assertions, mut skips) = (0, 0);
    each_node(node, |n| {
        if n.kind() != "call_expression" {
            return true;
        }
        let Some(f) = n
            .child_by_field_name("function")
            .filter(|f| f.kind() == "selector_expression")
        else {
            return true;
        };
        let operand = f
            .child_by_field_name("operand")
            .map_or("", |o| text(o, src));
        let field = f.child_by_field_name("field").map_or("", |o| text(o, src));
        if matches!(operand, "assert" | "require") {
            assertions += 1;
        } else if testing.contains(operand) {
            if ["Error", "Fatal", "Fail"]
                .iter()
                .any(|p| field.starts_with(p))
            {
                assertions += 1;
            } else if field.starts_with("Skip") {
                skips += 1;
            }
        }
        true
    });
    (assertions, skips)
}

#[cfg(test)]
mod tests {
    use super::super::{scan, Lang};
    use super::*;

    #[test]
    fn go_test_names_follow_go_test_rules() {
        for name in [
            "TestA",
            "Test",
            "Test_x",
            "BenchmarkB",
            "FuzzF",
            "ExampleE",
            "Example",
        ] {
            assert!(is_test_name(name), "{name}");
        }
        for name in ["TestMain", "Testing", "helper", "Benchmarks"] {
            assert!(!is_test_name(name), "{name}");
        }
    }

    #[test]
    fn methods_helpers_and_strings_are_not_go_tests() {
        let src = "package m\n\nimport \"testing\"\n\nconst code = `\nfunc TestFake(t *testing.T) {}\n`\n\nfunc (s *S) TestMethod(t *testing.T) {}\n\nfunc helper(tb testing.TB) {\n\ttb.Fatal(\"x\")\n}\n\nfunc TestReal(tt *testing.T) {\n\tif err := f(); err != nil {\n\t\ttt.Fatalf(\"%v\", err.Error())\n\t}\n\tassert.Equal(tt, 1, 1)\n\ttt.Run(\"sub\", func(st *testing.T) { st.Skip(\"later\") })\n}\n";
        let s = scan(Lang::Go, src).unwrap_or_default();
        assert_eq!(
            s.tests
                .iter()
                .map(|t| (
                    t.key.as_str(),
                    *t.lines.start(),
                    *t.lines.end(),
                    t.assertions,
                    t.skips
                ))
                .collect::<Vec<_>>(),
            vec![("TestReal", 15, 21, 2, 1)]
        );
    }
}
