//! eslint's `-f json`: an array of files, each with its `filePath` and `messages` (`ruleId`, `severity` 2 for
//! an error and 1 for a warning, `line`, `column`, `endLine`, `message`). A message without a rule is a parse
//! error.

use serde::Deserialize;

use super::{json_array, Finding, Findings, Format, Level};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct File {
    file_path: String,
    #[serde(default)]
    messages: Vec<Message>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Message {
    #[serde(default)]
    rule_id: Option<String>,
    #[serde(default)]
    severity: u8,
    message: String,
    #[serde(default)]
    line: Option<u32>,
    #[serde(default)]
    column: Option<u32>,
    #[serde(default)]
    end_line: Option<u32>,
}

/// Reads eslint's JSON, or None when `log` holds none.
pub fn read(log: &str) -> Option<Findings> {
    let (value, rest) = json_array(log)?;
    if !value
        .first()
        .is_some_and(|f| f.get("filePath").is_some() && f.get("messages").is_some())
    {
        return None;
    }
    let files: Vec<File> = serde_json::from_value(serde_json::Value::Array(value)).ok()?;
    let mut items = Vec::new();
    let mut human = rest;
    for file in files {
        for m in file.messages {
            let rule = m.rule_id.unwrap_or_else(|| "parse-error".into());
            let level = if m.severity >= 2 {
                Level::Error
            } else {
                Level::Warning
            };
            let f = Finding {
                rule,
                file: file.file_path.clone(),
                line: m.line,
                column: m.column,
                end_line: m.end_line,
                text: String::new(),
                message: m.message,
                level,
                targets: Vec::new(),
            };
            human.push_str(&f.describe());
            human.push('\n');
            items.push(f);
        }
    }
    Some(Findings {
        format: Format::Eslint,
        items,
        human,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eslint_json_gives_rule_severity_and_position_per_message() {
        let log = r#"[{"filePath":"{room}/calc.js","messages":[{"ruleId":"no-unused-vars","severity":2,"message":"'x' is assigned a value but never used.","line":3,"column":7,"endLine":3,"endColumn":8},{"ruleId":null,"severity":1,"message":"Unused eslint-disable directive","line":1,"column":1}],"errorCount":1,"warningCount":1,"source":"..."},{"filePath":"{room}/ok.js","messages":[]}]"#;
        let f = read(log).unwrap();
        assert_eq!(f.format, Format::Eslint);
        let got: Vec<String> = f.items.iter().map(Finding::describe).collect();
        assert_eq!(
            got,
            vec![
                "{room}/calc.js:3:7: 'x' is assigned a value but never used. [no-unused-vars]",
                "{room}/calc.js:1:1: Unused eslint-disable directive [parse-error]",
            ]
        );
        assert_eq!(f.items[0].level, Level::Error);
        assert_eq!(f.items[1].level, Level::Warning);
        assert_eq!(f.items[0].end_line, Some(3));
    }

    #[test]
    fn ruffs_json_is_not_eslints() {
        assert!(
            read(r#"[{"code":"F401","filename":"a.py","location":{"row":1,"column":1}}]"#)
                .is_none()
        );
    }
}
