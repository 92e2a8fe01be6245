//! `go vet -json`: per package a `# pkg` line and a JSON object `{"pkg": {"analyzer": [{"posn", "message"}]}}`
//! (an analyzer's entry may instead be `{"error": "..."}`). With `-json` vet exits 0 whatever it finds, so
//! the gate fails the step on its findings (see `lint::digest`). Type errors stay text (`vet: ./x.go:3:1:
//! ...`) and are read by the text fallback.

use serde_json::Value;

use super::{text, Finding, Findings, Format, Level};

/// Reads go vet's JSON, or None when `log` holds none.
pub fn read(log: &str) -> Option<Findings> {
    let mut items = Vec::new();
    let mut human = String::new();
    let mut any = false;
    let mut offset = 0;
    let mut skip_to = 0;
    for line in log.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        if start < skip_to {
            continue;
        }
        if line.starts_with('{') {
            let mut stream = serde_json::Deserializer::from_str(&log[start..]).into_iter::<Value>();
            if let Some(Ok(Value::Object(packages))) = stream.next() {
                if let Some(found) = diagnostics(&packages) {
                    any = true;
                    for f in found {
                        human.push_str(&format!("{}: {} [{}]\n", f.location(), f.message, f.rule));
                        items.push(f);
                    }
                    skip_to = start + stream.byte_offset();
                    continue;
                }
            }
        }
        human.push_str(line);
        if !line.ends_with('\n') {
            human.push('\n');
        }
        if !line.starts_with("# ") && !text::is_summary(line) {
            items.extend(text::read(line).items);
        }
    }
    any.then_some(Findings {
        format: Format::GoVet,
        items,
        human,
    })
}

/// The findings of one package object, None when it is not vet's shape.
fn diagnostics(packages: &serde_json::Map<String, Value>) -> Option<Vec<Finding>> {
    let mut out = Vec::new();
    for analyzers in packages.values() {
        for (analyzer, found) in analyzers.as_object()? {
            match found {
                Value::Array(list) => {
                    for d in list {
                        let posn = d.get("posn")?.as_str()?;
                        let message = d.get("message")?.as_str()?;
                        out.push(at(posn, analyzer, message));
                    }
                }
                Value::Object(o) => {
                    let message = o.get("error")?.as_str()?;
                    out.push(Finding {
                        rule: analyzer.clone(),
                        file: String::new(),
                        line: None,
                        column: None,
                        end_line: None,
                        text: text::normalize(message),
                        message: message.to_owned(),
                        level: Level::Error,
                        targets: Vec::new(),
                    });
                }
                _ => return None,
            }
        }
    }
    Some(out)
}

/// A finding at `file:line:col`.
fn at(posn: &str, analyzer: &str, message: &str) -> Finding {
    let mut parts = posn.rsplitn(3, ':');
    let (col, line, file) = (parts.next(), parts.next(), parts.next());
    let (file, line, column) = match (
        file,
        line.and_then(|l| l.parse().ok()),
        col.and_then(|c| c.parse().ok()),
    ) {
        (Some(f), Some(l), Some(c)) => (f.to_owned(), Some(l), Some(c)),
        _ => (posn.to_owned(), None, None),
    };
    Finding {
        rule: analyzer.to_owned(),
        file,
        line,
        column,
        end_line: None,
        text: String::new(),
        message: message.to_owned(),
        level: Level::Error,
        targets: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VET: &str = "# example.com/calc/sub\n{\n\t\"example.com/calc/sub\": {\n\t\t\"printf\": [\n\t\t\t{\n\t\t\t\t\"posn\": \"{room}/sub/s.go:5:21\",\n\t\t\t\t\"message\": \"fmt.Printf format %d has arg \\\"s\\\" of wrong type string\"\n\t\t\t}\n\t\t]\n\t}\n}\n# example.com/calc\n{\n\t\"example.com/calc\": {\n\t\t\"assign\": [\n\t\t\t{\n\t\t\t\t\"posn\": \"{room}/same.go:5:2\",\n\t\t\t\t\"message\": \"self-assignment of x to x\"\n\t\t\t}\n\t\t]\n\t}\n}\n";

    #[test]
    fn every_analyzer_finding_of_every_package_is_read_with_its_position() {
        let f = read(VET).unwrap();
        assert_eq!(f.format, Format::GoVet);
        let got: Vec<String> = f.items.iter().map(Finding::describe).collect();
        assert_eq!(
            got,
            vec![
                "{room}/sub/s.go:5:21: fmt.Printf format %d has arg \"s\" of wrong type string [printf]",
                "{room}/same.go:5:2: self-assignment of x to x [assign]",
            ]
        );
        assert_eq!(
            f.human,
            "# example.com/calc/sub\n{room}/sub/s.go:5:21: fmt.Printf format %d has arg \"s\" of wrong type string [printf]\n# example.com/calc\n{room}/same.go:5:2: self-assignment of x to x [assign]\n"
        );
    }

    #[test]
    fn a_type_error_beside_the_json_is_a_text_finding() {
        let log = format!(
            "{VET}# example.com/calc/bad\nvet: ./bad.go:3:23: cannot use \"s\" as int value\n"
        );
        let f = read(&log).unwrap();
        assert_eq!(f.items.len(), 3);
        assert_eq!(f.items[2].rule, "");
        assert!(f.items[2].message.contains("cannot use"));
    }

    #[test]
    fn plain_vet_output_is_not_read_here() {
        assert!(read("# example.com/calc\n./calc.go:7:2: bad\n").is_none());
        assert!(read("{\"reason\": \"compiler-message\"}\n").is_none());
    }
}
