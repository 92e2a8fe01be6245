//! The Kubernetes Indexed Job a backlog becomes: the emitted YAML parsed back into `k8s-openapi`'s `Job` and
//! checked field by field, the pod's command expanded the way the kubelet does it, and the init container's
//! clone run for real against a local repository.

use std::collections::BTreeMap;
use std::process::Command;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Container, EnvVar};
use vouch::backlog::k8s::{self, JobSpec, RepoClone, Resources, SecretEnv, SecretKey};

use crate::util::{git_env, Repo};

/// Values no manifest may hold: a model's API key and a forge token.
const API_KEY_VALUE: &str = "sk-live-k8s-emit-test-0123456789";
const FORGE_TOKEN_VALUE: &str = "ghp_k8sEmitTest0123456789abcdefABCDEF";

fn spec() -> JobSpec {
    let mut spec = JobSpec::new(
        "backlog-ready",
        "ghcr.io/team/vouch:0.1",
        vec![
            "add-subtract".to_string(),
            "team/app#12".to_string(),
            "fix-tabs".to_string(),
        ],
    );
    spec.namespace = Some("agents".to_string());
    spec.backlog_args = ["--label", "ready", "--open-pr", "--attempts", "2"]
        .map(String::from)
        .to_vec();
    spec.parallelism = Some(2);
    spec.backoff_limit_per_index = 3;
    spec.resources = Resources {
        cpu_request: Some("2".into()),
        memory_request: Some("3Gi".into()),
        cpu_limit: Some("4".into()),
        memory_limit: Some("6Gi".into()),
    };
    spec.endpoint = Some("http://llama.models.svc:8080".into());
    spec.model = Some("qwen3-coder".into());
    spec.secrets = vec![
        SecretEnv {
            env: "K8S_EMIT_TEST_API_KEY".into(),
            secret: "vouch-model".into(),
            key: "api-key".into(),
        },
        SecretEnv {
            env: "GITHUB_TOKEN".into(),
            secret: "vouch-forge".into(),
            key: "token".into(),
        },
    ];
    spec.api_key_env = Some("K8S_EMIT_TEST_API_KEY".into());
    spec.repo = Some(RepoClone {
        url: "https://github.com/team/app.git".into(),
        revision: "main".into(),
        token: Some(SecretKey {
            secret: "vouch-forge".into(),
            key: "token".into(),
        }),
        image: Some("alpine/git:2.47".into()),
    });
    spec
}

/// The manifest as `kubectl apply` reads it: rendered to YAML, parsed back by `k8s-openapi`.
fn emitted(spec: &JobSpec) -> (String, Job) {
    let yaml = k8s::render(&k8s::indexed_job(spec).unwrap()).unwrap();
    let job: Job = serde_norway::from_str(&yaml).unwrap();
    (yaml, job)
}

fn vouch_container(job: &Job) -> Container {
    let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    assert_eq!(pod.containers.len(), 1);
    pod.containers[0].clone()
}

fn init_container(job: &Job) -> Container {
    let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    let init = pod.init_containers.as_ref().unwrap();
    assert_eq!(init.len(), 1);
    init[0].clone()
}

/// The kubelet's expansion of `$(VAR)` in command, args and env values: `$$` is a literal `$`, a reference
/// to a variable the container has is replaced, any other `$` or reference stays as written.
fn expand(input: &str, env: &BTreeMap<&str, String>) -> String {
    let mut out = String::new();
    let mut rest = input;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(close) = after.strip_prefix('(').and_then(|a| a.find(')')) {
            let name = &after[1..=close];
            match env.get(name) {
                Some(value) => out.push_str(value),
                None => out.push_str(&rest[at..at + close + 3]),
            }
            rest = &after[close + 2..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// What the kubelet runs in container `c` of the pod with index `index`.
fn argv(c: &Container, index: usize) -> Vec<String> {
    let env = BTreeMap::from([(k8s::INDEX_ENV, index.to_string())]);
    c.command
        .iter()
        .flatten()
        .chain(c.args.iter().flatten())
        .map(|a| expand(a, &env))
        .collect()
}

fn env_of(c: &Container) -> BTreeMap<String, EnvVar> {
    c.env
        .iter()
        .flatten()
        .map(|e| (e.name.clone(), e.clone()))
        .collect()
}

#[test]
fn the_kubelet_expansion_helper_follows_the_api_documentation() {
    let env = BTreeMap::from([("A", "x".to_string())]);
    assert_eq!(expand("$(A)-$(B)-$$(A)-$1-$", &env), "x-$(B)-$(A)-$1-$");
}

#[test]
fn the_emitted_yaml_is_an_indexed_job_with_one_index_per_task() {
    let (yaml, job) = emitted(&spec());
    assert!(
        yaml.starts_with("apiVersion: batch/v1\nkind: Job\n"),
        "{yaml}"
    );
    assert_eq!(job.metadata.name.as_deref(), Some("backlog-ready"));
    assert_eq!(job.metadata.namespace.as_deref(), Some("agents"));
    let js = job.spec.clone().unwrap();
    assert_eq!(js.completion_mode.as_deref(), Some("Indexed"));
    assert_eq!(js.completions, Some(3));
    assert_eq!(js.parallelism, Some(2));
    assert_eq!(js.backoff_limit_per_index, Some(3));
    let pod = js.template.spec.unwrap();
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
    let volumes = pod.volumes.unwrap();
    assert_eq!(volumes.len(), 1);
    assert!(volumes[0].empty_dir.is_some());
    let labels = job.metadata.labels.unwrap();
    assert_eq!(labels["app.kubernetes.io/name"], "vouch");
    assert_eq!(
        job.metadata.annotations.unwrap()[k8s::TASK_IDS_ANNOTATION],
        "add-subtract,team/app#12,fix-tabs"
    );
}

#[test]
fn the_pod_failure_policy_makes_rejected_final_and_infrastructure_retried() {
    let (_, job) = emitted(&spec());
    let policy = job.spec.unwrap().pod_failure_policy.unwrap();
    let by_code: Vec<(Vec<i32>, String)> = policy
        .rules
        .iter()
        .filter_map(|r| {
            let codes = r.on_exit_codes.as_ref()?;
            assert_eq!(codes.operator, "In");
            assert_eq!(codes.container_name.as_deref(), Some(k8s::CONTAINER));
            Some((codes.values.clone(), r.action.clone()))
        })
        .collect();
    assert_eq!(
        by_code,
        [
            (vec![1], "FailIndex".to_string()),
            (vec![2], "FailIndex".to_string()),
            (vec![3], "Count".to_string()),
        ]
    );
    let disruption = &policy.rules[0];
    assert_eq!(disruption.action, "Ignore");
    let cond = &disruption.on_pod_conditions.as_ref().unwrap()[0];
    assert_eq!(
        (cond.type_.as_str(), cond.status.as_str()),
        ("DisruptionTarget", "True")
    );
}

#[test]
fn each_pod_runs_the_per_index_entry_point_of_its_task() {
    let s = spec();
    let (_, job) = emitted(&s);
    let c = vouch_container(&job);
    assert_eq!(c.name, k8s::CONTAINER);
    assert_eq!(c.image.as_deref(), Some("ghcr.io/team/vouch:0.1"));
    assert_eq!(c.working_dir.as_deref(), Some(k8s::REPO_DIR));
    for index in 0..s.task_ids.len() {
        let expected: Vec<String> = ["vouch", "backlog"]
            .into_iter()
            .map(String::from)
            .chain(s.backlog_args.iter().cloned())
            .chain([
                "--index".to_string(),
                index.to_string(),
                "--task-ids".to_string(),
                "add-subtract,team/app#12,fix-tabs".to_string(),
            ])
            .collect();
        assert_eq!(argv(&c, index), expected);
    }
}

#[test]
fn a_literal_that_looks_like_a_reference_reaches_vouch_unchanged() {
    let mut s = spec();
    s.backlog_args = vec!["--label".into(), "$(HOME)$$".into()];
    s.task_ids = vec!["cost-$(JOB_COMPLETION_INDEX)".into()];
    let (_, job) = emitted(&s);
    assert_eq!(
        argv(&vouch_container(&job), 0),
        [
            "vouch",
            "backlog",
            "--label",
            "$(HOME)$$",
            "--index",
            "0",
            "--task-ids",
            "cost-$(JOB_COMPLETION_INDEX)"
        ]
    );
}

#[test]
fn the_model_settings_are_plain_variables_and_every_secret_a_secret_key_ref() {
    let (yaml, job) = emitted(&spec());
    let env = env_of(&vouch_container(&job));
    let plain = |name: &str| env[name].value.clone().unwrap();
    assert_eq!(plain("VOUCH_ENDPOINT"), "http://llama.models.svc:8080");
    assert_eq!(plain("VOUCH_MODEL"), "qwen3-coder");
    assert_eq!(plain("VOUCH_API_KEY_ENV"), "K8S_EMIT_TEST_API_KEY");
    for (name, secret, key) in [
        ("K8S_EMIT_TEST_API_KEY", "vouch-model", "api-key"),
        ("GITHUB_TOKEN", "vouch-forge", "token"),
    ] {
        assert_eq!(env[name].value, None, "{name} has an inline value");
        let r = env[name]
            .value_from
            .as_ref()
            .unwrap()
            .secret_key_ref
            .as_ref()
            .unwrap();
        assert_eq!((r.name.as_str(), r.key.as_str()), (secret, key));
    }
    let init_env = env_of(&init_container(&job));
    assert_eq!(init_env.len(), 1);
    let token = &init_env[k8s::CLONE_TOKEN_ENV];
    assert_eq!(token.value, None);
    assert_eq!(
        token
            .value_from
            .as_ref()
            .unwrap()
            .secret_key_ref
            .as_ref()
            .unwrap()
            .name,
        "vouch-forge"
    );
    assert_eq!(yaml.matches("secretKeyRef:").count(), 3, "{yaml}");
}

#[test]
fn no_secret_value_can_appear_in_the_manifest() {
    // The module takes names only: no value from this process's environment that looks like a secret
    // (the machine's own tokens and keys, if any) reaches the YAML, nor the values named here.
    let (yaml, job) = emitted(&spec());
    assert!(!yaml.contains(API_KEY_VALUE));
    assert!(!yaml.contains(FORGE_TOKEN_VALUE));
    for (name, value) in std::env::vars() {
        let secretish = ["TOKEN", "KEY", "SECRET", "PASSWORD"]
            .iter()
            .any(|w| name.to_uppercase().contains(w));
        if secretish && value.len() >= 8 {
            assert!(
                !yaml.contains(&value),
                "the value of {name} is in the manifest"
            );
        }
    }
    // Every variable with a value is one vouch sets from the spec's plain settings.
    let pod = job.spec.unwrap().template.spec.unwrap();
    for c in pod
        .containers
        .iter()
        .chain(pod.init_containers.iter().flatten())
    {
        for e in c.env.iter().flatten() {
            if e.value.is_some() {
                assert!(
                    [
                        "VOUCH_ENDPOINT",
                        "VOUCH_MODEL",
                        "VOUCH_API_KEY_ENV",
                        "VOUCH_DATA",
                        "VOUCH_CACHE"
                    ]
                    .contains(&e.name.as_str()),
                    "{} has an inline value",
                    e.name
                );
            }
        }
    }
    // And a value where a name belongs is refused, not written.
    let mut forge = spec();
    forge.secrets[1].env = FORGE_TOKEN_VALUE.into();
    let mut model = spec();
    model.secrets[0].env = API_KEY_VALUE.into();
    model.api_key_env = Some(API_KEY_VALUE.into());
    for (s, value) in [(forge, FORGE_TOKEN_VALUE), (model, API_KEY_VALUE)] {
        let e = k8s::indexed_job(&s).unwrap_err();
        assert!(
            matches!(e, k8s::K8sError::LooksLikeSecretValue { .. }),
            "{e}"
        );
        assert!(
            !e.to_string().contains(value),
            "the error echoes the value: {e}"
        );
    }
}

#[test]
fn resources_are_requests_and_limits() {
    let (_, job) = emitted(&spec());
    let r = vouch_container(&job).resources.unwrap();
    let text =
        |m: Option<BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>| {
            m.unwrap()
                .into_iter()
                .map(|(k, v)| format!("{k}={}", v.0))
                .collect::<Vec<_>>()
        };
    assert_eq!(text(r.requests), ["cpu=2", "memory=3Gi"]);
    assert_eq!(text(r.limits), ["cpu=4", "memory=6Gi"]);
}

#[test]
fn the_init_container_clones_the_revision_into_the_pods_working_directory() {
    let source = Repo::with_files(&[("README.md", "one\n")]);
    let first = source.commit("noop").to_string();
    source.write("README.md", "two\n");
    source.commit("second");
    let mut s = spec();
    let url = format!("file://{}", source.dir.display());
    s.repo = Some(RepoClone {
        url: url.clone(),
        revision: first.trim().to_string(),
        token: None,
        image: None,
    });
    let (_, job) = emitted(&s);
    let init = init_container(&job);
    assert_eq!(init.image.as_deref(), Some("ghcr.io/team/vouch:0.1"));
    let mut argv = argv(&init, 0);
    assert_eq!(
        argv[3..6],
        ["vouch-clone".to_string(), url, first.trim().to_string()]
    );
    assert_eq!(argv[6], k8s::REPO_DIR);
    let dest = source.tmp.path().join("pod-work/repo");
    argv[6] = dest.display().to_string();
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .envs(git_env())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let head = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(&dest)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&head.stdout).trim(), first.trim());
    assert_eq!(
        std::fs::read_to_string(dest.join("README.md")).unwrap(),
        "one\n"
    );
}

#[test]
fn the_clone_hands_git_the_token_through_a_credential_helper_only() {
    let (_, job) = emitted(&spec());
    let init = init_container(&job);
    let argv = argv(&init, 0);
    let script = &argv[2];
    assert!(script.contains(k8s::CLONE_CREDENTIAL_HELPER), "{script}");
    assert!(!argv.iter().any(|a| a.contains('@')), "{argv:?}");
    // The helper, run by git as the clone would, answers with the token from the variable.
    let out = Command::new("git")
        .args(["-c", "credential.helper="])
        .arg("-c")
        .arg(format!(
            "credential.helper={}",
            k8s::CLONE_CREDENTIAL_HELPER
        ))
        .args(["credential", "fill"])
        .envs(git_env())
        .env(k8s::CLONE_TOKEN_ENV, "tok-123")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(b"protocol=https\nhost=github.com\npath=team/app.git\n\n")?;
            child.wait_with_output()
        })
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("username=x-access-token\n"), "{text}");
    assert!(text.contains("password=tok-123\n"), "{text}");
}
