//! The report as JUnit XML for CI: one suite of the steps (a test case each, failed, skipped or passed) and one
//! of the new test failures (a failed case per test). A `preexisting` step (it fails at base alike) is not a
//! failure of the change: its case passes, with `<system-out>preexisting: <note></system-out>`. A gate that
//! could not judge (verdict `error`) adds a suite with one errored case that gives the reason.
//!
//! Written with quick-xml, which escapes names and messages; characters XML 1.0 cannot hold at all (the
//! control characters of coloured tool output) are dropped first.

use std::borrow::Cow;

use anyhow::{Context, Result};
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};
use quick_xml::Writer;

use crate::gate::outcome::{StepStatus, Verdict};
use crate::gate::report::Report;

impl Report {
    /// JUnit XML: one test case per step, and one per new failure.
    pub fn junit(&self) -> Result<String> {
        let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
        write_junit(self, &mut w).context("write the JUnit report")?;
        let mut xml = String::from_utf8(w.into_inner()).context("the JUnit report is not UTF-8")?;
        xml.push('\n');
        Ok(xml)
    }
}

fn write_junit(report: &Report, w: &mut Writer<Vec<u8>>) -> std::io::Result<()> {
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    w.write_event(Event::Start(element(
        "testsuites",
        &[("name", "vouch gate")],
    )))?;

    let failures = report.steps.iter().filter(|st| st.status.is_bad()).count();
    let (tests, failures) = (report.steps.len().to_string(), failures.to_string());
    w.write_event(Event::Start(element(
        "testsuite",
        &[
            ("name", "steps"),
            ("tests", &tests),
            ("failures", &failures),
        ],
    )))?;
    for st in &report.steps {
        let time = format!("{:.3}", st.duration_ms as f64 / 1000.0);
        let case = element(
            "testcase",
            &[
                ("classname", "vouch.gate"),
                ("name", &st.name),
                ("time", &time),
            ],
        );
        let note = st.note.as_deref().unwrap_or("");
        match st.status {
            StepStatus::Pass => w.write_event(Event::Empty(case))?,
            // Not the change's failure, so not a JUnit failure either: a passing case that says so.
            StepStatus::Preexisting => {
                w.write_event(Event::Start(case))?;
                w.write_event(Event::Start(BytesStart::new("system-out")))?;
                let out = format!("{}: {note}", st.status.name());
                w.write_event(Event::Text(BytesText::new(&xml_chars(&out))))?;
                w.write_event(Event::End(BytesEnd::new("system-out")))?;
                w.write_event(Event::End(BytesEnd::new("testcase")))?;
            }
            StepStatus::Skipped => {
                w.write_event(Event::Start(case))?;
                w.write_event(Event::Empty(element("skipped", &[("message", note)])))?;
                w.write_event(Event::End(BytesEnd::new("testcase")))?;
            }
            _ => {
                let message = format!("{} {note}", st.status.name());
                w.write_event(Event::Start(case))?;
                w.write_event(Event::Start(element("failure", &[("message", &message)])))?;
                w.write_event(Event::Text(BytesText::new(&xml_chars(&st.log_tail))))?;
                w.write_event(Event::End(BytesEnd::new("failure")))?;
                w.write_event(Event::End(BytesEnd::new("testcase")))?;
            }
        }
    }
    w.write_event(Event::End(BytesEnd::new("testsuite")))?;

    let new = report.tests.new_failures.len().to_string();
    w.write_event(Event::Start(element(
        "testsuite",
        &[
            ("name", "new test failures"),
            ("tests", &new),
            ("failures", &new),
        ],
    )))?;
    for id in &report.tests.new_failures {
        w.write_event(Event::Start(element(
            "testcase",
            &[("classname", "vouch.tests"), ("name", id)],
        )))?;
        w.write_event(Event::Empty(element(
            "failure",
            &[("message", "new failure")],
        )))?;
        w.write_event(Event::End(BytesEnd::new("testcase")))?;
    }
    w.write_event(Event::End(BytesEnd::new("testsuite")))?;
    if report.verdict == Verdict::Error {
        w.write_event(Event::Start(element(
            "testsuite",
            &[("name", "gate"), ("tests", "1"), ("errors", "1")],
        )))?;
        w.write_event(Event::Start(element(
            "testcase",
            &[("classname", "vouch.gate"), ("name", "verdict")],
        )))?;
        w.write_event(Event::Empty(element(
            "error",
            &[("message", &report.reasons.join("; "))],
        )))?;
        w.write_event(Event::End(BytesEnd::new("testcase")))?;
        w.write_event(Event::End(BytesEnd::new("testsuite")))?;
    }
    w.write_event(Event::End(BytesEnd::new("testsuites")))?;
    Ok(())
}

/// An element with attributes in this order, their values escaped and cleaned by [`xml_chars`].
fn element<'a>(name: &'a str, attributes: &[(&str, &str)]) -> BytesStart<'a> {
    let mut e = BytesStart::new(name);
    for (key, value) in attributes {
        e.push_attribute((*key, xml_chars(value).as_ref()));
    }
    e
}

/// `text` without the control characters XML 1.0 forbids (all below U+0020 but tab, line feed and carriage
/// return), such as the escape sequences of coloured output.
fn xml_chars(text: &str) -> Cow<'_, str> {
    let forbidden = |c: char| (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r');
    if text.contains(forbidden) {
        Cow::Owned(text.chars().filter(|&c| !forbidden(c)).collect())
    } else {
        Cow::Borrowed(text)
    }
}

#[cfg(test)]
mod tests {
    use quick_xml::events::attributes::Attributes;
    use quick_xml::Reader;

    use super::*;
    use crate::gate::report::tests::sample;

    /// What a JUnit consumer reads: every element with its attributes, and the text inside elements.
    fn read_back(xml: &str) -> Vec<String> {
        let attrs = |a: Attributes| -> String {
            a.map(|a| {
                let a = a.unwrap();
                format!(
                    "{}={:?}",
                    String::from_utf8_lossy(a.key.as_ref()),
                    a.unescape_value().unwrap()
                )
            })
            .collect::<Vec<_>>()
            .join(" ")
        };
        let mut reader = Reader::from_str(xml);
        reader.config_mut().trim_text(true);
        let mut out = Vec::new();
        loop {
            match reader.read_event().unwrap() {
                Event::Start(e) => out.push(format!(
                    "<{}> {}",
                    String::from_utf8_lossy(e.name().as_ref()),
                    attrs(e.attributes())
                )),
                Event::Empty(e) => out.push(format!(
                    "<{}/> {}",
                    String::from_utf8_lossy(e.name().as_ref()),
                    attrs(e.attributes())
                )),
                Event::Text(t) => out.push(format!("text {:?}", t.unescape().unwrap())),
                Event::Eof => break,
                _ => {}
            }
        }
        out
    }

    #[test]
    fn suites_cases_failures_and_skips_read_back_with_their_messages() {
        let xml = sample().junit().unwrap();
        assert!(
            xml.starts_with(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"vouch gate\">\n"
            ),
            "{xml}"
        );
        assert!(xml.ends_with("</testsuites>\n"), "{xml}");
        assert_eq!(
            read_back(&xml),
            vec![
                r#"<testsuites> name="vouch gate""#,
                r#"<testsuite> name="steps" tests="3" failures="1""#,
                r#"<testcase/> classname="vouch.gate" name="fmt" time="0.250""#,
                r#"<testcase> classname="vouch.gate" name="lint" time="0.000""#,
                r#"<skipped/> message="skipped: `ruff` is not installed (not on PATH)""#,
                r#"<testcase> classname="vouch.gate" name="pytest <all>" time="12.345""#,
                r#"<failure> message="fail 1 test also failing at base (not blamed) & \"more\"""#,
                r#"text "FAILED tests/test_a.py::test_x - assert 1 == 2 <&>[0m""#,
                r#"<testsuite> name="new test failures" tests="1" failures="1""#,
                r#"<testcase> classname="vouch.tests" name="tests/test_a.py::test_x[<'a'>]""#,
                r#"<failure/> message="new failure""#,
            ]
        );
    }

    #[test]
    fn a_gate_that_could_not_judge_has_an_errored_case_with_the_reason() {
        use crate::gate::outcome::{Finding, Rule};
        use crate::gate::report::{Report, Rev};
        let rev = |r: &str| Rev {
            rev: r.into(),
            sha: String::new(),
        };
        let finding = Finding::new(Rule::Infrastructure, "`cargo` is not installed");
        let xml = Report::error(rev("main"), rev("HEAD"), finding)
            .junit()
            .unwrap();
        assert_eq!(
            read_back(&xml),
            vec![
                r#"<testsuites> name="vouch gate""#,
                r#"<testsuite> name="steps" tests="0" failures="0""#,
                r#"<testsuite> name="new test failures" tests="0" failures="0""#,
                r#"<testsuite> name="gate" tests="1" errors="1""#,
                r#"<testcase> classname="vouch.gate" name="verdict""#,
                r#"<error/> message="`cargo` is not installed""#,
            ]
        );
    }

    #[test]
    fn a_preexisting_step_is_a_passing_case_that_says_so() {
        let mut report = sample();
        let clippy = report.steps.iter_mut().find(|s| s.name == "lint").unwrap();
        clippy.status = StepStatus::Preexisting;
        clippy.note = Some("fails at base too, with the same findings".into());
        let got = read_back(&report.junit().unwrap());
        assert_eq!(got[1], r#"<testsuite> name="steps" tests="3" failures="1""#);
        assert_eq!(
            got[3..6],
            [
                r#"<testcase> classname="vouch.gate" name="lint" time="0.000""#.to_string(),
                "<system-out> ".to_string(),
                r#"text "preexisting: fails at base too, with the same findings""#.to_string(),
            ]
        );
    }

    #[test]
    fn control_characters_are_dropped_and_other_text_kept() {
        assert_eq!(xml_chars("a\u{1b}[0m\tb\r\n\u{7}"), "a[0m\tb\r\n");
        assert!(matches!(xml_chars("plain <text>"), Cow::Borrowed(_)));
    }
}
