//! The CI examples (`examples/github-actions/*.yml`) and the gate action (`action.yml`): read as YAML, their
//! structure checked, and every `vouch` command in them checked against the real binary's `--help`.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::sync::LazyLock;

use regex::Regex;
use yaml_rust2::{Yaml, YamlLoader};

const ACTION: &str = "action.yml";
const SHARDS: &str = "examples/github-actions/backlog-shards.yml";
const GATE_PR: &str = "examples/github-actions/gate-pr.yml";

static EXPR: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\$\{\{[^}]*\}\}").unwrap());

fn load(path: &str) -> Yaml {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path);
    let text = std::fs::read_to_string(&file).unwrap();
    let mut docs = YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert_eq!(docs.len(), 1, "{path}");
    docs.remove(0)
}

/// Every value of a `key:` anywhere in `doc`, in document order.
fn values_of<'a>(doc: &'a Yaml, key: &str, out: &mut Vec<&'a Yaml>) {
    match doc {
        Yaml::Hash(h) => {
            for (k, v) in h {
                if k.as_str() == Some(key) {
                    out.push(v);
                }
                values_of(v, key, out);
            }
        }
        Yaml::Array(a) => a.iter().for_each(|v| values_of(v, key, out)),
        _ => {}
    }
}

/// Every string scalar in `doc`, keys included.
fn strings<'a>(doc: &'a Yaml, out: &mut Vec<&'a str>) {
    match doc {
        Yaml::String(s) => out.push(s),
        Yaml::Hash(h) => h.iter().for_each(|(k, v)| {
            strings(k, out);
            strings(v, out);
        }),
        Yaml::Array(a) => a.iter().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// The `vouch` commands of the `run:` scripts in `doc`, as words (`${{ ... }}` expressions become `EXPR`).
fn vouch_commands(doc: &Yaml) -> Vec<Vec<String>> {
    let mut runs = Vec::new();
    values_of(doc, "run", &mut runs);
    let mut commands = Vec::new();
    for script in runs.iter().filter_map(|r| r.as_str()) {
        let script = EXPR.replace_all(script, "EXPR").replace("\\\n", " ");
        for line in script.lines() {
            for part in line.split(['|', ';', '&']) {
                let part = part.trim();
                if part.starts_with("vouch ") {
                    commands.push(shell_words::split(part).unwrap());
                }
            }
        }
    }
    commands
}

fn help(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vouch"))
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The `vouch` commands of `doc` use subcommands and flags the binary has; returns the subcommands used.
fn check_commands(path: &str, doc: &Yaml) -> BTreeSet<String> {
    let commands = vouch_commands(doc);
    assert!(!commands.is_empty(), "{path}: no vouch command found");
    let (_, top) = help(&[]);
    let mut used = BTreeSet::new();
    for words in commands {
        let sub = words[1].clone();
        used.insert(sub.clone());
        let listed = top
            .lines()
            .any(|l| l.split_whitespace().next() == Some(sub.as_str()));
        assert!(
            listed,
            "{path}: `vouch {sub}` is no subcommand of vouch:\n{top}"
        );
        check_flags(path, &sub, &words[2..]);
    }
    used
}

/// Every flag among `words` is one `vouch SUB --help` lists.
fn check_flags(path: &str, sub: &str, words: &[String]) {
    let (ok, text) = help(&[sub]);
    assert!(ok, "vouch {sub} --help failed");
    for word in words.iter().filter(|w| w.starts_with('-')) {
        let flag = word.split('=').next().unwrap();
        let known = Regex::new(&format!(r"(^|[\s,]){}([\s=,\[<]|$)", regex::escape(flag)))
            .unwrap()
            .is_match(&text);
        assert!(known, "{path}: `vouch {sub}` has no flag {flag}:\n{text}");
    }
}

/// No token-shaped string anywhere, and every variable or input that holds a token or key comes from a
/// secret (or from the action's input, which the workflow fills from a secret).
fn check_secrets(path: &str, doc: &Yaml) {
    let token = Regex::new(r"(ghp_|gho_|ghs_|github_pat_|glpat-|sk-)[A-Za-z0-9_\-]{6,}").unwrap();
    let mut all = Vec::new();
    strings(doc, &mut all);
    for s in &all {
        assert!(!token.is_match(s), "{path}: a literal token: {s}");
    }
    let secretish = Regex::new(r"(?i)(token|api_key|secret|password)").unwrap();
    let mut maps = Vec::new();
    values_of(doc, "env", &mut maps);
    values_of(doc, "with", &mut maps);
    let mut checked = 0;
    for map in maps.iter().filter_map(|m| m.as_hash()) {
        for (k, v) in map {
            let (Some(k), Some(v)) = (k.as_str(), v.as_str()) else {
                continue;
            };
            if secretish.is_match(k) && !k.ends_with("_ENV") {
                assert!(
                    v.starts_with("${{ secrets.") || v.starts_with("${{ inputs."),
                    "{path}: {k} is `{v}`, not a secret reference"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 0, "{path}: no secret referenced");
}

#[test]
fn the_shard_workflow_covers_every_shard_once_and_uses_real_flags() {
    let doc = load(SHARDS);
    let on = &doc["on"];
    assert!(
        !on["workflow_dispatch"].is_badvalue(),
        "no workflow_dispatch"
    );
    assert!(on["schedule"][0]["cron"].as_str().is_some(), "no schedule");

    let jobs = doc["jobs"].as_hash().unwrap();
    assert_eq!(jobs.len(), 1);
    let job = jobs.values().next().unwrap();
    let shards: Vec<i64> = job["strategy"]["matrix"]["shard"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|s| s.as_i64().unwrap())
        .collect();
    let commands = vouch_commands(&doc);
    assert_eq!(commands.len(), 1, "{commands:?}");
    let backlog = &commands[0];
    assert_eq!(backlog[1], "backlog");
    let shard = backlog.iter().position(|w| w == "--shard").unwrap();
    let n: i64 = backlog[shard + 1]
        .strip_prefix("EXPR/")
        .unwrap()
        .parse()
        .unwrap();
    let mut runs = Vec::new();
    values_of(&doc, "run", &mut runs);
    assert!(runs
        .iter()
        .filter_map(|r| r.as_str())
        .any(|r| r.contains(&format!("--shard ${{{{ matrix.shard }}}}/{n}"))));
    assert_eq!(
        shards,
        (1..=n).collect::<Vec<_>>(),
        "the matrix must be 1..{n}"
    );
    assert!(backlog.contains(&"--label".to_string()));

    let steps = job["steps"].as_vec().unwrap();
    let upload = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/upload-artifact@"))
        })
        .expect("an upload-artifact step");
    assert_eq!(upload["if"].as_str(), Some("always()"));
    let paths = upload["with"]["path"].as_str().unwrap();
    for ext in ["json", "md"] {
        let file = format!("summary-${{{{ matrix.shard }}}}.{ext}");
        assert!(paths.contains(&file), "{paths}");
        let flag = if ext == "json" {
            "--json"
        } else {
            "--markdown"
        };
        let at = backlog.iter().position(|w| w == flag).unwrap();
        assert_eq!(backlog[at + 1], format!("summary-EXPR.{ext}"));
    }
    assert!(runs
        .iter()
        .filter_map(|r| r.as_str())
        .any(|r| r.contains("$GITHUB_STEP_SUMMARY")));

    let env = &job["env"];
    for (name, secret) in [
        ("VOUCH_ENDPOINT", "VOUCH_ENDPOINT"),
        ("VOUCH_MODEL", "VOUCH_MODEL"),
        ("VOUCH_API_KEY", "VOUCH_API_KEY"),
    ] {
        assert_eq!(
            env[name].as_str(),
            Some(format!("${{{{ secrets.{secret} }}}}").as_str())
        );
    }
    assert_eq!(env["VOUCH_API_KEY_ENV"].as_str(), Some("VOUCH_API_KEY"));
    check_secrets(SHARDS, &doc);
    check_commands(SHARDS, &doc);
}

#[test]
fn the_action_gates_the_pull_request_and_posts_the_verdict() {
    let doc = load(ACTION);
    assert_eq!(doc["runs"]["using"].as_str(), Some("composite"));
    let inputs = doc["inputs"].as_hash().unwrap();
    let names: BTreeSet<&str> = inputs.keys().filter_map(|k| k.as_str()).collect();
    for name in [
        "token",
        "profile",
        "args",
        "install",
        "git-url",
        "release-url",
    ] {
        assert!(names.contains(name), "no input {name}");
    }
    assert_eq!(doc["inputs"]["token"]["required"].as_bool(), Some(true));
    assert_eq!(doc["inputs"]["install"]["default"].as_str(), Some("source"));
    assert_eq!(
        doc["outputs"]["verdict"]["value"].as_str(),
        Some("${{ steps.gate.outputs.verdict }}")
    );
    let steps = doc["runs"]["steps"].as_vec().unwrap();
    assert!(steps.iter().all(|s| s["shell"].as_str() == Some("bash")));
    let install = steps[0]["run"].as_str().unwrap();
    for way in [
        "source)",
        "git)",
        "release)",
        "--path \"$GITHUB_ACTION_PATH\"",
        "--git \"$GIT_URL\"",
    ] {
        assert!(install.contains(way), "install lacks {way}");
    }
    let gate = steps
        .iter()
        .find(|s| s["id"].as_str() == Some("gate"))
        .expect("a step with id gate");
    assert!(gate["run"]
        .as_str()
        .unwrap()
        .contains("verdict=$verdict\" >> \"$GITHUB_OUTPUT\""));

    let commands = vouch_commands(&doc);
    assert_eq!(commands.len(), 1, "{commands:?}");
    let words = &commands[0];
    assert_eq!(words[..2], ["vouch", "gate"]);
    for flag in ["--pr", "--post", "--token-env", "--json", "--markdown"] {
        assert!(words.iter().any(|w| w == flag), "vouch gate without {flag}");
    }
    let pr = words.iter().position(|w| w == "--pr").unwrap();
    assert_eq!(words[pr + 1], "$REPOSITORY#$PR_NUMBER");
    let token_env = words.iter().position(|w| w == "--token-env").unwrap();
    assert!(gate["env"][words[token_env + 1].as_str()]
        .as_str()
        .is_some_and(|v| v == "${{ inputs.token }}"));
    check_secrets(ACTION, &doc);
    assert!(check_commands(ACTION, &doc).contains("gate"));
}

#[test]
fn the_gate_example_gives_the_action_only_inputs_it_has() {
    let action = load(ACTION);
    let doc = load(GATE_PR);
    assert!(!doc["on"]["pull_request"].is_badvalue());
    let mut uses = Vec::new();
    values_of(&doc, "uses", &mut uses);
    let steps: Vec<&Yaml> = doc["jobs"]["gate"]["steps"]
        .as_vec()
        .unwrap()
        .iter()
        .collect();
    let checkout = steps[0];
    assert!(checkout["uses"]
        .as_str()
        .unwrap()
        .starts_with("actions/checkout@"));
    assert_eq!(
        checkout["with"]["fetch-depth"].as_i64(),
        Some(0),
        "the gate needs the history"
    );
    let step = steps
        .iter()
        .find(|s| s["uses"].as_str().is_some_and(|u| u.contains("/vouch@")))
        .expect("a step using vouch's action");
    for (k, _) in step["with"].as_hash().unwrap() {
        let k = k.as_str().unwrap();
        assert!(
            !action["inputs"][k].is_badvalue(),
            "action.yml has no input {k}"
        );
    }
    assert_eq!(
        step["with"]["token"].as_str(),
        Some("${{ secrets.GITHUB_TOKEN }}")
    );
    // The extra arguments are `vouch gate` flags too.
    let args = shell_words::split(step["with"]["args"].as_str().unwrap()).unwrap();
    assert!(!args.is_empty());
    check_flags(GATE_PR, "gate", &args);
    let perms = &doc["permissions"];
    for p in ["pull-requests", "statuses"] {
        assert_eq!(perms[p].as_str(), Some("write"), "permission {p}");
    }
    check_secrets(GATE_PR, &doc);
}
