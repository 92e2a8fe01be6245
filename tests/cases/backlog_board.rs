//! The backlog's live board on a real pseudo-terminal: the bytes vouch writes there are replayed on a
//! screen ([`crate::util::pty::Screen`]) and the test reads what a user saw: one line per task redrawn in
//! place, each task's states in order, the summary after the board, nothing wider than the terminal, plain
//! lines on a terminal that cannot move its cursor, and no more frames than the state changes call for.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::backlog::{calc_repo, command, fixing, no_go, tasks, title};
use crate::util::model_server::{Answer, ModelServer};
use crate::util::pty::{self, PtyRun, Screen};

/// Plan order (sorted): two run at once, the third waits queued.
const IDS: [&str; 3] = ["dead-server", "fix-the-adder", "give-up-early"];

/// The outcome each task ends with.
fn outcome(id: &str) -> &'static str {
    match id {
        "dead-server" => "infra",
        "fix-the-adder" => "verified",
        _ => "rejected",
    }
}

/// `vouch backlog --jobs 2` over the three tasks on a terminal `cols` wide, with `env` set on top of a
/// colour terminal's; what the terminal got, and how long the run took.
async fn on_terminal(cols: u16, env: &[(&str, &str)]) -> (PtyRun, Duration) {
    let repo = calc_repo();
    let dir = tasks(&repo, &IDS);
    let server = ModelServer::start(vec![
        ("Title dead-server", vec![Answer::DeadForever]),
        ("Title fix-the-adder", fixing()),
        ("Title give-up-early", vec![no_go("not this one")]),
    ])
    .await;
    let mut cmd = command(&repo, &dir, &server.url, &["--jobs", "2"], &[]);
    cmd.env("TERM", "xterm-256color").env_remove("NO_COLOR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let started = Instant::now();
    let run = tokio::task::spawn_blocking(move || pty::run(cmd, cols, 40))
        .await
        .unwrap();
    let elapsed = started.elapsed();
    let sessions = server.finish();
    assert_eq!(sessions[&title("fix-the-adder")].len(), 3);
    drop(repo);
    (run, elapsed)
}

/// A board row's task and state: `  <spinner> <id padded> <state>`.
fn board_row(line: &str) -> Option<(&'static str, String)> {
    let rest = line.strip_prefix("  ")?;
    let mut chars = rest.chars();
    let spinner = chars.next()?;
    if spinner.is_alphanumeric() || chars.next() != Some(' ') {
        return None;
    }
    let rest = chars.as_str();
    let id = IDS.iter().find(|id| {
        rest.strip_prefix(**id)
            .is_some_and(|r| r.starts_with(' ') || r.is_empty())
    })?;
    Some((id, rest[id.len()..].trim().to_string()))
}

/// Each task's states in the order the screen showed them, repeats dropped.
fn states(screen: &Screen) -> BTreeMap<&'static str, Vec<String>> {
    let mut out: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    for line in &screen.history {
        if let Some((id, state)) = board_row(line) {
            let seen = out.entry(id).or_default();
            if seen.last() != Some(&state) {
                seen.push(state);
            }
        }
    }
    out
}

/// Where a state stands in a task's life: queued, claimed, attempt 1 starting, its turns, gating, done.
fn rank(state: &str, outcome: &str) -> Option<u32> {
    let turn = |s: &str| {
        s.strip_prefix("attempt 1: running turn ")?
            .parse::<u32>()
            .ok()
    };
    match state {
        "queued" => Some(0),
        "claimed" => Some(1),
        "attempt 1: starting" => Some(2),
        "attempt 1: gating" => Some(1000),
        s if s == outcome => Some(1001),
        s => turn(s).map(|t| 2 + t),
    }
}

/// The summary table at the end of the screen: header, a row per task, the count line.
fn assert_summary_follows(screen: &Screen, text: &str) {
    let lines = screen.lines();
    let header = lines
        .iter()
        .position(|l| l.split_whitespace().take(2).eq(["task", "status"]))
        .unwrap_or_else(|| panic!("no summary table on the screen:\n{}", lines.join("\n")));
    for id in IDS {
        assert!(
            lines[header..]
                .iter()
                .any(|l| l.split_whitespace().take(2).eq([id, outcome(id)])),
            "no summary row for {id}:\n{}",
            lines.join("\n")
        );
    }
    assert!(
        text.contains("3 tasks: 1 verified, 1 rejected, 1 infra"),
        "{text}"
    );
    // The board is gone from the final screen: the table took its place.
    assert!(
        lines.iter().all(|l| board_row(l).is_none()),
        "board rows left:\n{}",
        lines.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_terminal_each_task_has_one_line_redrawn_through_its_states_then_the_summary() {
    let cols = 100;
    let (run, elapsed) = on_terminal(cols, &[]).await;
    let text = run.text();
    assert_eq!(run.code, 3, "{text}");
    let mut screen = Screen::new(cols);
    screen.feed(&run.bytes);
    let states = states(&screen);
    let frames = screen.cursor_ups;
    eprintln!(
        "board: {} bytes, {frames} frames, {} line erases in {elapsed:?}, states {states:#?}",
        run.bytes.len(),
        screen.line_erases
    );
    // Redrawn in place: the cursor went up and lines were erased and written again.
    assert!(
        frames >= 3 && screen.line_erases >= 3,
        "no redraw: {frames} cursor-ups, {} line erases",
        screen.line_erases
    );
    let mut changes = 0;
    for id in IDS {
        let seen = &states[id];
        let ranks: Vec<u32> = seen
            .iter()
            .map(|s| rank(s, outcome(id)).unwrap_or_else(|| panic!("{id}: state `{s}`: {seen:?}")))
            .collect();
        assert!(ranks.windows(2).all(|w| w[0] < w[1]), "{id}: {seen:?}");
        assert_eq!(seen.last().map(String::as_str), Some(outcome(id)), "{id}");
        assert!(
            seen.iter().any(|s| s.starts_with("attempt 1")),
            "{id}: never shown running: {seen:?}"
        );
        changes += seen.len();
    }
    // The last whole frame, before the lines were cleared for the summary: every task's line with its
    // outcome, in plan order.
    let last = screen
        .frames
        .iter()
        .rev()
        .map(|f| f.iter().filter_map(|l| board_row(l)).collect::<Vec<_>>())
        .find(|rows| rows.len() == IDS.len())
        .unwrap();
    let want: Vec<(&str, String)> = IDS
        .iter()
        .map(|id| (*id, outcome(id).to_string()))
        .collect();
    assert_eq!(last, want, "{:#?}", screen.frames.last());
    // The third task waited for a slot, queued, before it ran.
    assert_eq!(states["give-up-early"][0], "queued");
    assert!(screen.wrapped.iter().all(|l| board_row(l).is_none()));
    assert_summary_follows(&screen, &text);
    // No flood: a frame per state change, and the running tasks' spinners (two at a time, 4 turns a
    // second each). A frame moves the cursor up at most twice (to erase the lines, then to write them) and
    // writes the three lines with their cursor moves; the header and the table come besides.
    let allowed = changes + (10.0 * elapsed.as_secs_f64()) as usize + 10;
    assert!(
        frames <= 2 * allowed,
        "{frames} cursor-ups for {changes} state changes in {elapsed:?}"
    );
    let frame_bytes = 3 * (usize::from(cols) + 40);
    assert!(
        run.bytes.len() <= allowed * frame_bytes + 8192,
        "{} bytes for {changes} state changes in {elapsed:?}",
        run.bytes.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_narrow_terminal_the_task_lines_are_cut_to_its_width_not_wrapped() {
    let cols = 40;
    let (run, _) = on_terminal(cols, &[]).await;
    let text = run.text();
    assert_eq!(run.code, 3, "{text}");
    let mut screen = Screen::new(cols);
    screen.feed(&run.bytes);
    let wrapped: Vec<&String> = screen
        .wrapped
        .iter()
        .filter(|l| board_row(l).is_some())
        .collect();
    assert!(wrapped.is_empty(), "task lines wrapped: {wrapped:#?}");
    let states = states(&screen);
    for id in IDS {
        let seen = &states[id];
        // Cut, not garbled: each state shown is the start of a real one, and the outcome fits.
        assert!(
            seen.iter().all(|s| {
                ["queued", "claimed", "attempt 1: ", outcome(id)]
                    .iter()
                    .any(|full| full.starts_with(s.as_str()) || s.starts_with(full))
            }),
            "{id}: {seen:?}"
        );
        assert_eq!(seen.last().map(String::as_str), Some(outcome(id)), "{id}");
    }
    assert_summary_follows(&screen, &text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dumb_terminal_gets_plain_lines_and_no_color_gets_the_board_without_color() {
    let (run, _) = on_terminal(80, &[("TERM", "dumb")]).await;
    let text = run.text();
    assert_eq!(run.code, 3, "{text}");
    assert!(
        !text.contains('\x1b'),
        "escape sequences on a dumb terminal: {text:?}"
    );
    for id in IDS {
        let told: Vec<&str> = text
            .lines()
            .filter_map(|l| l.trim_end_matches('\r').strip_prefix(&format!("  {id}: ")))
            .collect();
        assert_eq!(
            told.first().copied(),
            Some("claimed"),
            "{id}: {told:?}\n{text}"
        );
        assert_eq!(told.last().copied(), Some(outcome(id)), "{id}: {told:?}");
        assert!(told.contains(&"attempt 1: starting"), "{id}: {told:?}");
    }
    let mut screen = Screen::new(80);
    screen.feed(&run.bytes);
    assert_summary_follows(&screen, &text);

    let (run, _) = on_terminal(80, &[("NO_COLOR", "1")]).await;
    let mut screen = Screen::new(80);
    screen.feed(&run.bytes);
    assert_eq!(
        screen.styled,
        0,
        "colour despite NO_COLOR: {:?}",
        run.text()
    );
    assert!(
        screen.cursor_ups > 0,
        "NO_COLOR is about colour: the board stays live"
    );
    assert_summary_follows(&screen, &run.text());
}
