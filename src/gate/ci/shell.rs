//! A CI `run:` block (multi-line bash) split into the simple commands it runs.
//!
//! Not a shell: enough of one to find `cargo test --all-features` in `RUSTFLAGS=-Dwarnings cargo test ... &&
//! cd sub && cargo build`. Line continuations are joined, comments and heredoc bodies dropped, each line split
//! into words (`shell-words`, quotes honoured) and cut at `&&`, `||`, `;`, `|` and `&`. Leading `VAR=value`
//! words become the command's environment; `export VAR=value` and `cd DIR` carry over to the commands after
//! them. `$VAR` and `${VAR}` are expanded only from the variables the workflow defines; anything else stays
//! as written, so an unknown program (`$BUILD_CMD build`) is visibly unknown rather than guessed.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

/// One simple command of a script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellCommand {
    /// Variables set for it: the block's exports, then its own `VAR=value` prefix.
    pub env: BTreeMap<String, String>,
    pub argv: Vec<String>,
    /// The directory a `cd` earlier in the block moved to, if any.
    pub dir: Option<String>,
}

impl ShellCommand {
    /// The command as a user would type it.
    pub fn text(&self) -> String {
        self.argv
            .iter()
            .map(|w| {
                if w.is_empty() || w.chars().any(char::is_whitespace) {
                    shell_words::quote(w).into_owned()
                } else {
                    w.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

static VAR: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:\[[@*]\])?\}|\$([A-Za-z_][A-Za-z0-9_]*)").ok()
});
static HEREDOC: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#"<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?"#).ok());

const SEPARATORS: &[&str] = &["&&", "||", ";", ";;", "|", "&"];
/// Words that open a compound command or prefix a simple one: dropped, the command follows.
const PREFIXES: &[&str] = &[
    "then", "do", "else", "elif", "if", "while", "until", "!", "{", "(", "time", "sudo", "exec",
    "command", "env",
];
/// Words that make the whole segment structure, not a command.
const STRUCTURE: &[&str] = &["case", "esac", "fi", "done", "for", "}", ")", "function"];

/// The simple commands of `script`, with `$VAR` expanded from `vars`.
pub fn commands(script: &str, vars: &BTreeMap<String, String>) -> Vec<ShellCommand> {
    let joined = script.replace("\\\r\n", " ").replace("\\\n", " ");
    let mut exported: BTreeMap<String, String> = BTreeMap::new();
    let mut dir: Option<String> = None;
    let mut out = Vec::new();
    let mut heredoc: Option<String> = None;
    for line in joined.lines() {
        let line = line.trim();
        if let Some(end) = &heredoc {
            if line == end {
                heredoc = None;
            }
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(re) = HEREDOC.as_ref() {
            if let Some(c) = re.captures(line) {
                heredoc = c.get(1).map(|m| m.as_str().to_owned());
            }
        }
        let mut known = vars.clone();
        known.extend(exported.clone());
        let expanded = expand(line, &known);
        let Ok(words) = shell_words::split(&expanded) else {
            continue;
        };
        for segment in segments(words) {
            let Some(cmd) = simple(segment, &mut exported, &mut dir) else {
                continue;
            };
            out.push(cmd);
        }
    }
    out
}

/// `$VAR` and `${VAR}` replaced where `vars` knows them.
pub fn expand(text: &str, vars: &BTreeMap<String, String>) -> String {
    let Some(re) = VAR.as_ref() else {
        return text.to_owned();
    };
    re.replace_all(text, |c: &regex::Captures| {
        let name = c
            .get(1)
            .or_else(|| c.get(2))
            .map(|m| m.as_str())
            .unwrap_or_default();
        // A value that is itself an expression the workflow reader could not fill in stays unexpanded.
        match vars.get(name).filter(|v| !v.contains("${{")) {
            Some(v) => v.clone(),
            None => c.get(0).map(|m| m.as_str().to_owned()).unwrap_or_default(),
        }
    })
    .into_owned()
}

/// Words cut at the command separators (also a `;` glued to the end of a word).
fn segments(words: Vec<String>) -> Vec<Vec<String>> {
    let mut out = vec![Vec::new()];
    for w in words {
        if SEPARATORS.contains(&w.as_str()) {
            out.push(Vec::new());
            continue;
        }
        let (word, cut) = match w.strip_suffix(";;").or_else(|| w.strip_suffix(';')) {
            Some(head) if !head.is_empty() => (head.to_owned(), true),
            _ => (w, false),
        };
        if let Some(last) = out.last_mut() {
            last.push(word);
        }
        if cut {
            out.push(Vec::new());
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

/// The words less redirections (`> file`, `2>&1`, `>>log`), which are not arguments.
fn without_redirections(words: Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = words.into_iter();
    while let Some(w) = it.next() {
        let op = w.trim_start_matches(|c: char| c.is_ascii_digit() || c == '&');
        if [">", ">>", "<", "<<<", ">|"].contains(&op) {
            it.next();
            continue;
        }
        if op.starts_with('>') || op.starts_with('<') {
            continue;
        }
        out.push(w);
    }
    out
}

fn is_assignment(word: &str) -> Option<(String, String)> {
    let (name, value) = word.split_once('=')?;
    let ok = !name.is_empty()
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    ok.then(|| (name.to_owned(), value.to_owned()))
}

/// One segment as a simple command, or `None` for structure, assignments and `cd`.
fn simple(
    mut words: Vec<String>,
    exported: &mut BTreeMap<String, String>,
    dir: &mut Option<String>,
) -> Option<ShellCommand> {
    while words
        .first()
        .is_some_and(|w| PREFIXES.contains(&w.as_str()))
    {
        words.remove(0);
    }
    let first = words.first()?.clone();
    if STRUCTURE.contains(&first.as_str()) || (first.ends_with(')') && !first.contains('=')) {
        return None;
    }
    // An array assignment `X=(a b c)` spans words: not a command, but `${X[@]}` later expands to its words.
    if let Some((name, v)) = is_assignment(&first).filter(|(_, v)| v.starts_with('(')) {
        let mut items = vec![v.trim_start_matches('(').to_owned()];
        items.extend(words[1..].iter().cloned());
        if items.last().is_some_and(|w| w.ends_with(')')) {
            if let Some(last) = items.last_mut() {
                *last = last.trim_end_matches(')').to_owned();
            }
            items.retain(|w| !w.is_empty());
            exported.insert(name, shell_words::join(&items));
        }
        return None;
    }
    let words = without_redirections(words);
    if first == "export" {
        for w in &words[1..] {
            if let Some((k, v)) = is_assignment(w) {
                exported.insert(k, v);
            }
        }
        return None;
    }
    let mut env = exported.clone();
    let mut rest = words.into_iter().peekable();
    while let Some(w) = rest.peek() {
        match is_assignment(w) {
            Some((k, v)) => {
                env.insert(k, v);
                rest.next();
            }
            None => break,
        }
    }
    let argv: Vec<String> = rest.collect();
    if argv.is_empty() {
        // A plain assignment on its own line sets a shell variable the later commands may export.
        for (k, v) in env {
            exported.entry(k).or_insert(v);
        }
        return None;
    }
    if argv[0] == "cd" {
        *dir = argv.get(1).cloned();
        return None;
    }
    Some(ShellCommand {
        env,
        argv,
        dir: dir.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argvs(script: &str) -> Vec<Vec<String>> {
        commands(script, &BTreeMap::new())
            .into_iter()
            .map(|c| c.argv)
            .collect()
    }

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    #[test]
    fn continuation_lines_and_and_chains_become_separate_commands() {
        let script =
            "rustup update $nightly && rustup default $nightly\ncargo test \\\n  --all-features\n";
        let vars = BTreeMap::from([("nightly".to_owned(), "nightly-2024-09-15".to_owned())]);
        let got: Vec<Vec<String>> = commands(script, &vars)
            .into_iter()
            .map(|c| c.argv)
            .collect();
        assert_eq!(
            got,
            vec![
                words("rustup update nightly-2024-09-15"),
                words("rustup default nightly-2024-09-15"),
                words("cargo test --all-features"),
            ]
        );
    }

    #[test]
    fn an_env_prefix_is_the_commands_environment_not_its_program() {
        let cmds = commands(
            r#"RUSTFLAGS="--cfg loom -Dwarnings" cargo test --lib"#,
            &BTreeMap::new(),
        );
        assert_eq!(cmds.len(), 1);
        assert_eq!(cmds[0].argv, words("cargo test --lib"));
        assert_eq!(
            cmds[0].env.get("RUSTFLAGS").map(String::as_str),
            Some("--cfg loom -Dwarnings")
        );
    }

    #[test]
    fn exports_and_cd_carry_over_to_later_commands() {
        let cmds = commands(
            "export RUSTFLAGS=-Dwarnings\ncd tracing && cargo test",
            &BTreeMap::new(),
        );
        assert_eq!(cmds.len(), 1);
        assert_eq!(cmds[0].dir.as_deref(), Some("tracing"));
        assert_eq!(
            cmds[0].env.get("RUSTFLAGS").map(String::as_str),
            Some("-Dwarnings")
        );
    }

    #[test]
    fn comments_heredocs_case_patterns_and_array_assignments_are_not_commands() {
        // The shape of tracing's cargo-hack job and of a heredoc'd config file.
        let script = "# check\nCARGO_HACK=(cargo hack check --feature-powerset --no-dev-deps)\n\
                      case \"x\" in\n  tracing)\n    ${CARGO_HACK[@]} --exclude-features a\n    ;;\nesac\n\
                      cat > f <<EOF\ncargo test --all-features\nEOF\ngo test -race ./... # all\n";
        assert_eq!(
            argvs(script),
            vec![
                words("cargo hack check --feature-powerset --no-dev-deps --exclude-features a"),
                words("cat"),
                words("go test -race ./..."),
            ]
        );
    }

    #[test]
    fn unknown_variables_stay_as_written() {
        assert_eq!(
            argvs("$BUILD_CMD build --locked"),
            vec![words("$BUILD_CMD build --locked")]
        );
        let vars = BTreeMap::from([("MSRV_FEATURES".to_owned(), "--all-features".to_owned())]);
        let got = commands(r#"cargo test --locked "${MSRV_FEATURES}""#, &vars);
        assert_eq!(got[0].argv, words("cargo test --locked --all-features"));
    }

    #[test]
    fn a_semicolon_glued_to_a_word_ends_the_command() {
        assert_eq!(
            argvs("sudo apt-get -y update ; sudo apt-get -y install gcc; make test"),
            vec![
                words("apt-get -y update"),
                words("apt-get -y install gcc"),
                words("make test"),
            ]
        );
    }
}
