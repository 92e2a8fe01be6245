//! `ruff check --output-format=json`: one JSON array of violations, each with its rule code, file name,
//! location and message. Ruff does not print the flagged source, so the reader leaves the text empty and
//! [`read`](super::read) takes the flagged lines from the room.

use serde::Deserialize;

use super::{json_array, Finding, Findings, Format, Level};

#[derive(Deserialize)]
struct Violation {
    #[serde(default)]
    code: Option<String>,
    filename: String,
    location: Location,
    #[serde(default)]
    end_location: Option<Location>,
    message: String,
}

#[derive(Deserialize)]
struct Location {
    row: u32,
    column: u32,
}

/// Reads ruff's JSON, or None when `log` holds no ruff JSON array.
pub fn read(log: &str) -> Option<Findings> {
    let (value, rest) = json_array(log)?;
    let first = value.first()?;
    if first.get("filename").is_none() || first.get("location").is_none() {
        return None;
    }
    let violations: Vec<Violation> =
        serde_json::from_value(serde_json::Value::Array(value)).ok()?;
    let mut items = Vec::new();
    let mut human = rest.clone();
    for v in violations {
        let rule = v.code.unwrap_or_else(|| "syntax-error".into());
        human.push_str(&format!(
            "{}:{}:{}: {rule} {}\n",
            v.filename, v.location.row, v.location.column, v.message
        ));
        items.push(Finding {
            rule,
            file: v.filename,
            line: Some(v.location.row),
            column: Some(v.location.column),
            end_line: v.end_location.map(|e| e.row),
            text: String::new(),
            message: v.message,
            level: Level::Error,
            targets: Vec::new(),
        });
    }
    Some(Findings {
        format: Format::Ruff,
        items,
        human,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ruff_json_gives_code_file_location_and_message() {
        let log = "warning: some ruff chatter\n[\n  {\n    \"cell\": null, \"code\": \"F401\",\n    \"end_location\": {\"column\": 10, \"row\": 1},\n    \"filename\": \"{room}/calc.py\", \"fix\": null,\n    \"location\": {\"column\": 8, \"row\": 1},\n    \"message\": \"`os` imported but unused\", \"noqa_row\": 1, \"url\": null\n  }\n]\n";
        let f = read(log).unwrap();
        assert_eq!(f.format, Format::Ruff);
        assert_eq!(f.items.len(), 1);
        assert_eq!(f.items[0].rule, "F401");
        assert_eq!(f.items[0].location(), "{room}/calc.py:1:8");
        assert_eq!(
            f.human,
            "warning: some ruff chatter\n{room}/calc.py:1:8: F401 `os` imported but unused\n"
        );
    }

    #[test]
    fn other_json_is_not_ruffs() {
        assert!(read("[{\"filePath\": \"a.js\", \"messages\": []}]").is_none());
        assert!(read("[]").is_none());
        assert!(read("calc.py:1:8: F401 `os` imported but unused").is_none());
    }
}
