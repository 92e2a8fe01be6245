//! The one summary of a backlog run, built from the task records: a console table, `--json` and
//! `--markdown` all come from [`Summary`].

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::state::{Attempt, Outcome, TaskRecord};

/// A task's place in the summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Verified,
    Rejected,
    Failed,
    Infra,
    Interrupted,
    /// Another runner holds the task's claim; this run skipped it.
    Skipped,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Verified => "verified",
            Status::Rejected => "rejected",
            Status::Failed => "failed",
            Status::Infra => "infra",
            Status::Interrupted => "interrupted",
            Status::Skipped => "skipped",
        }
    }
}

impl From<Outcome> for Status {
    fn from(o: Outcome) -> Status {
        match o {
            Outcome::Verified => Status::Verified,
            Outcome::Rejected => Status::Rejected,
            Outcome::Failed => Status::Failed,
            Outcome::Infra => Status::Infra,
            Outcome::Interrupted => Status::Interrupted,
        }
    }
}

/// One row: a task of this invocation's plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Row {
    pub task: String,
    pub title: String,
    pub status: Status,
    /// Finished by an earlier run (`--resume` left it alone).
    pub earlier: bool,
    /// Every attempt: model, outcome, time.
    pub attempts: Vec<Attempt>,
    /// Over all attempts.
    pub turns: u32,
    pub duration_ms: u64,
    pub branch: Option<String>,
    pub pr: Option<String>,
}

impl Row {
    /// The row of a task's record.
    pub fn of(record: &TaskRecord, earlier: bool) -> Row {
        let last = record.attempts.last();
        Row {
            task: record.id.clone(),
            title: record.title.clone(),
            status: record.outcome.unwrap_or(Outcome::Interrupted).into(),
            earlier,
            attempts: record.attempts.clone(),
            turns: record.attempts.iter().map(|a| a.turns).sum(),
            duration_ms: record.attempts.iter().map(|a| a.duration_ms).sum(),
            branch: last.and_then(|a| a.branch.clone()),
            pr: record.attempts.iter().rev().find_map(|a| a.pr.clone()),
        }
    }

    /// A task another runner holds.
    pub fn skipped(id: &str, title: &str) -> Row {
        Row {
            task: id.into(),
            title: title.into(),
            status: Status::Skipped,
            earlier: false,
            attempts: vec![],
            turns: 0,
            duration_ms: 0,
            branch: None,
            pr: None,
        }
    }
}

/// The whole backlog run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub tasks: Vec<Row>,
}

impl Summary {
    pub fn count(&self, status: Status) -> usize {
        self.tasks.iter().filter(|r| r.status == status).count()
    }

    /// 130 when anything was interrupted, else 3 when an infrastructure failure left a task undone, else 1
    /// when a task was rejected or failed, else 0.
    pub fn exit_code(&self) -> i32 {
        use crate::error::*;
        let any = |s| self.count(s) > 0;
        if any(Status::Interrupted) {
            EXIT_INTERRUPTED
        } else if any(Status::Infra) {
            EXIT_INFRA
        } else if any(Status::Rejected) || any(Status::Failed) {
            EXIT_FAIL
        } else {
            EXIT_PASS
        }
    }

    fn cells(row: &Row) -> [String; 7] {
        let status = if row.earlier {
            format!("{} (earlier)", row.status.name())
        } else {
            row.status.name().to_string()
        };
        let models: Vec<String> = row
            .attempts
            .iter()
            .map(|a| format!("{}{}", a.model, if a.escalated { "*" } else { "" }))
            .collect();
        let attempts = if models.is_empty() {
            "0".to_string()
        } else {
            format!("{} ({})", row.attempts.len(), models.join(", "))
        };
        [
            row.task.clone(),
            status,
            attempts,
            row.turns.to_string(),
            seconds(row.duration_ms),
            row.branch.clone().unwrap_or_else(|| "-".into()),
            row.pr.clone().unwrap_or_else(|| "-".into()),
        ]
    }

    const HEADER: [&'static str; 7] = [
        "task", "status", "attempts", "turns", "time", "branch", "PR",
    ];

    /// The table on the console, with a totals line.
    pub fn console(&self) -> String {
        let rows: Vec<[String; 7]> = self.tasks.iter().map(Summary::cells).collect();
        let mut widths = Summary::HEADER.map(str::len);
        for r in &rows {
            for (w, c) in widths.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let mut s = String::new();
            for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
                if i + 1 == cells.len() {
                    s.push_str(c);
                } else {
                    let _ = write!(s, "{c:<w$}  ");
                }
            }
            s.trim_end().to_string()
        };
        let mut out = String::new();
        let header: Vec<String> = Summary::HEADER.iter().map(|h| h.to_string()).collect();
        let _ = writeln!(out, "{}", line(&header));
        for r in &rows {
            let _ = writeln!(out, "{}", line(r));
        }
        let _ = writeln!(out, "{}", self.totals());
        out
    }

    /// `12 tasks: 9 verified, 2 rejected, 1 infra`.
    pub fn totals(&self) -> String {
        let parts: Vec<String> = [
            Status::Verified,
            Status::Rejected,
            Status::Failed,
            Status::Infra,
            Status::Interrupted,
            Status::Skipped,
        ]
        .into_iter()
        .filter(|s| self.count(*s) > 0)
        .map(|s| format!("{} {}", self.count(s), s.name()))
        .collect();
        format!(
            "{} task{}: {}",
            self.tasks.len(),
            if self.tasks.len() == 1 { "" } else { "s" },
            if parts.is_empty() {
                "none".to_string()
            } else {
                parts.join(", ")
            }
        )
    }

    /// The table in Markdown, then every attempt.
    pub fn markdown(&self) -> String {
        let mut s = String::from("# vouch backlog\n\n");
        let _ = writeln!(s, "{}\n", self.totals());
        let _ = writeln!(s, "| {} |", Summary::HEADER.join(" | "));
        let _ = writeln!(s, "|{}", "---|".repeat(Summary::HEADER.len()));
        for row in &self.tasks {
            let cells = Summary::cells(row).map(|c| c.replace('|', "\\|"));
            let _ = writeln!(s, "| {} |", cells.join(" | "));
        }
        let tried: Vec<&Row> = self
            .tasks
            .iter()
            .filter(|r| !r.attempts.is_empty())
            .collect();
        if !tried.is_empty() {
            s.push_str("\n## Attempts\n\n| task | attempt | model | endpoint | outcome | turns | time |\n|---|---|---|---|---|---|---|\n");
            for row in tried {
                for a in &row.attempts {
                    let _ = writeln!(
                        s,
                        "| {} | {}{} | {} | {} | {} | {} | {} |",
                        row.task,
                        a.n,
                        if a.escalated { " (escalated)" } else { "" },
                        a.model,
                        a.endpoint,
                        a.outcome.name(),
                        a.turns,
                        seconds(a.duration_ms)
                    );
                }
            }
        }
        s
    }
}

fn seconds(ms: u64) -> String {
    format!("{:.1}s", ms as f64 / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn attempt(n: u32, outcome: Outcome, escalated: bool) -> Attempt {
        Attempt {
            n,
            endpoint: "http://m".into(),
            model: if escalated { "big" } else { "small" }.into(),
            escalated,
            outcome,
            run_status: None,
            exit_code: Some(outcome.exit_code()),
            started: 0,
            duration_ms: 1500,
            turns: 3,
            branch: Some("vouch/a".into()),
            pr: None,
            report: None,
            log: PathBuf::from("a.log"),
            error: None,
        }
    }

    fn summary() -> Summary {
        let record = TaskRecord {
            id: "a".into(),
            title: "A".into(),
            outcome: Some(Outcome::Verified),
            attempts: vec![
                attempt(1, Outcome::Rejected, false),
                attempt(2, Outcome::Verified, true),
            ],
        };
        Summary {
            tasks: vec![Row::of(&record, false), Row::skipped("b", "B")],
        }
    }

    #[test]
    fn the_console_table_has_a_row_per_task_and_the_totals() {
        let text = summary().console();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "task  status    attempts         turns  time  branch   PR"
        );
        assert_eq!(
            lines[1],
            "a     verified  2 (small, big*)  6      3.0s  vouch/a  -"
        );
        assert_eq!(
            lines[2],
            "b     skipped   0                0      0.0s  -        -"
        );
        assert_eq!(lines[3], "2 tasks: 1 verified, 1 skipped");
    }

    #[test]
    fn the_markdown_names_every_attempt_and_the_exit_code_follows_the_worst() {
        let s = summary();
        let md = s.markdown();
        assert!(
            md.contains("| a | 2 (escalated) | big | http://m | verified | 3 | 1.5s |"),
            "{md}"
        );
        assert_eq!(s.exit_code(), 0);
        let mut worse = s.clone();
        worse.tasks[1].status = Status::Infra;
        assert_eq!(worse.exit_code(), 3);
        worse.tasks[0].status = Status::Interrupted;
        assert_eq!(worse.exit_code(), 130);
    }
}
