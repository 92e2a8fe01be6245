//! `vouch gate` on a Go module (standard library only): gofmt, go vet, go build, go test -json.

use crate::util::Repo;

const GO_MOD: &str = "module example.com/calc\n\ngo 1.19\n";
const CALC: &str = "package calc\n\n// Add returns a + b.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n\n// Abs returns the absolute value of x.\nfunc Abs(x int) int {\n\tif x < 0 {\n\t\treturn x\n\t}\n\treturn x\n}\n";
const CALC_TEST: &str = "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tcases := []struct {\n\t\tname string\n\t\ta, b int\n\t\twant int\n\t}{\n\t\t{\"small\", 1, 2, 3},\n\t}\n\tfor _, c := range cases {\n\t\tt.Run(c.name, func(t *testing.T) {\n\t\t\tif got := Add(c.a, c.b); got != c.want {\n\t\t\t\tt.Fatalf(\"Add(%d, %d) = %d, want %d\", c.a, c.b, got, c.want)\n\t\t\t}\n\t\t})\n\t}\n}\n";
const FIXED: &str = "package calc\n\n// Add returns a + b.\nfunc Add(a, b int) int {\n\treturn a + b\n}\n\n// Abs returns the absolute value of x.\nfunc Abs(x int) int {\n\tif x < 0 {\n\t\treturn -x\n\t}\n\treturn x\n}\n";
const ABS_TEST: &str = "package calc\n\nimport \"testing\"\n\nfunc TestAbs(t *testing.T) {\n\tif got := Abs(-3); got != 3 {\n\t\tt.Fatalf(\"Abs(-3) = %d, want 3\", got)\n\t}\n}\n";

fn module() -> Repo {
    Repo::with_files(&[
        ("go.mod", GO_MOD),
        ("calc.go", CALC),
        ("calc_test.go", CALC_TEST),
    ])
}

#[test]
fn a_correct_go_fix_with_its_test_passes() {
    let repo = module();
    repo.write("calc.go", FIXED);
    repo.write("abs_test.go", ABS_TEST);
    repo.commit("fix Abs");
    let before = repo.snapshot();
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.report()["profile"]["name"], "go");
    for step in ["gofmt", "vet", "build", "test"] {
        assert_eq!(g.step(step)["status"], "pass", "{step}: {}", g.explain());
    }
    assert_eq!(
        g.step("golangci-lint")["status"].as_str().unwrap() == "skipped",
        !crate_has("golangci-lint")
    );
    // TestAdd, its subtest TestAdd/small, TestAbs.
    assert_eq!(g.step("test")["tests"]["passed"], 3, "{}", g.explain());
    assert_eq!(repo.snapshot(), before);
}

fn crate_has(program: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn a_gofmt_violation_fails_naming_the_file() {
    let repo = module();
    repo.write(
        "calc.go",
        &FIXED.replace("\treturn -x", "        return -x"),
    );
    repo.write("abs_test.go", ABS_TEST);
    repo.commit("fix Abs, badly formatted");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(g.step("gofmt")["status"], "fail");
    assert!(
        g.reasons()
            .iter()
            .any(|r| r.contains("gofmt") && r.contains("calc.go")),
        "{}",
        g.explain()
    );
}

#[test]
fn a_go_vet_finding_fails_the_gate() {
    let repo = module();
    repo.write(
        "calc.go",
        &FIXED.replace(
            "package calc\n",
            "package calc\n\nimport \"fmt\"\n\nfunc debug(x int) { fmt.Printf(\"%s\\n\", x) }\n",
        ),
    );
    repo.write("abs_test.go", ABS_TEST);
    repo.commit("fix Abs with a bad Printf");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(g.step("vet")["status"], "fail");
    assert!(
        g.step("vet")["log_tail"]
            .as_str()
            .unwrap()
            .contains("Printf format %s"),
        "{}",
        g.explain()
    );
}

#[test]
fn a_new_failing_go_subtest_is_blamed_and_an_old_failure_elsewhere_is_not() {
    let repo = Repo::with_files(&[
        ("go.mod", GO_MOD),
        ("calc.go", CALC),
        ("calc_test.go", CALC_TEST),
        ("legacy/legacy.go", "package legacy\n\n// Two returns 2.\nfunc Two() int { return 3 }\n"),
        ("legacy/legacy_test.go", "package legacy\n\nimport \"testing\"\n\nfunc TestTwo(t *testing.T) {\n\tif Two() != 2 {\n\t\tt.Fatal(\"Two() != 2\")\n\t}\n}\n"),
    ]);
    // Only a table row is added, and it fails.
    repo.write(
        "calc_test.go",
        &CALC_TEST.replace(
            "{\"small\", 1, 2, 3},",
            "{\"small\", 1, 2, 3},\n\t\t{\"wrong\", 2, 2, 5},",
        ),
    );
    repo.commit("add a table row");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    let new = g.tests("new_failures");
    assert!(
        new.contains(&"example.com/calc::TestAdd/wrong".to_string()),
        "{}",
        g.explain()
    );
    assert!(
        !new.iter().any(|id| id.contains("legacy")),
        "{}",
        g.explain()
    );
    assert_eq!(
        g.tests("preexisting_failures"),
        vec!["example.com/calc/legacy::TestTwo".to_string()]
    );
}

#[test]
fn when_base_does_not_build_the_report_says_so_and_head_is_judged_alone() {
    let repo = Repo::with_files(&[
        ("go.mod", GO_MOD),
        (
            "calc.go",
            "package calc\n\n// Add returns a + b.\nfunc Add(a, b int) int {\n\treturn a +\n}\n",
        ),
        ("calc_test.go", CALC_TEST),
    ]);
    repo.write("calc.go", CALC);
    repo.write("abs_test.go", ABS_TEST);
    repo.commit("repair the build, add a test for Abs (still wrong)");
    let g = repo.gate(&["--base", "HEAD~1"]);
    assert_eq!(g.verdict(), "fail", "{}", g.explain());
    assert_eq!(
        g.report()["tests"]["baseline"],
        "base-broken",
        "{}",
        g.explain()
    );
    assert!(
        g.report()["notes"]
            .to_string()
            .contains("base does not build"),
        "{}",
        g.explain()
    );
    assert_eq!(
        g.tests("new_failures"),
        vec!["example.com/calc::TestAbs".to_string()]
    );
}
