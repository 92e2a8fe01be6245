//! The report as JUnit XML for CI: one suite of the steps (a test case each, failed, skipped or passed) and one
//! of the new test failures (a failed case per test).

use std::fmt::Write as _;

use crate::gate::outcome::StepStatus;
use crate::gate::report::Report;

impl Report {
    /// JUnit XML: one test case per step, and one per new failure.
    pub fn junit(&self) -> String {
        let mut s = String::from(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"vouch gate\">\n",
        );
        let failures = self.steps.iter().filter(|st| st.status.is_bad()).count();
        let _ = writeln!(
            s,
            "  <testsuite name=\"steps\" tests=\"{}\" failures=\"{}\">",
            self.steps.len(),
            failures
        );
        for st in &self.steps {
            let _ = write!(
                s,
                "    <testcase classname=\"vouch.gate\" name=\"{}\" time=\"{:.3}\"",
                xml(&st.name),
                st.duration_ms as f64 / 1000.0
            );
            match st.status {
                StepStatus::Pass => s.push_str("/>\n"),
                StepStatus::Skipped => {
                    let _ = writeln!(
                        s,
                        "><skipped message=\"{}\"/></testcase>",
                        xml(st.note.as_deref().unwrap_or(""))
                    );
                }
                _ => {
                    let _ = writeln!(
                        s,
                        "><failure message=\"{}\">{}</failure></testcase>",
                        xml(&format!(
                            "{} {}",
                            st.status.name(),
                            st.note.as_deref().unwrap_or("")
                        )),
                        xml(&st.log_tail)
                    );
                }
            }
        }
        s.push_str("  </testsuite>\n");
        let _ = writeln!(
            s,
            "  <testsuite name=\"new test failures\" tests=\"{}\" failures=\"{}\">",
            self.tests.new_failures.len(),
            self.tests.new_failures.len()
        );
        for id in &self.tests.new_failures {
            let _ = writeln!(
                s,
                "    <testcase classname=\"vouch.tests\" name=\"{}\"><failure message=\"new failure\"/></testcase>",
                xml(id)
            );
        }
        s.push_str("  </testsuite>\n</testsuites>\n");
        s
    }
}

fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' && c != '\r' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_text_is_escaped_and_control_characters_dropped() {
        assert_eq!(xml("a<b & \"c\"\u{1b}[0m"), "a&lt;b &amp; &quot;c&quot;[0m");
    }
}
