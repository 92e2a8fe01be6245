//! A backlog as a Kubernetes Indexed Job: one index per task, each pod running the same per-index entry
//! point the local pool runs (`vouch backlog <source args> --index I --task-ids a,b,c`).
//!
//! The cluster is the scheduler: `completionMode: Indexed` gives every pod its index in
//! `JOB_COMPLETION_INDEX` (the Job controller adds that variable to each container's environment), and the
//! container's args name it as `$(JOB_COMPLETION_INDEX)`, which the kubelet expands from the container's
//! environment (the `args` field's reference: "Variable references $(VAR_NAME) are expanded using the
//! container's environment"; `$$` stands for a literal `$`, so every literal string is escaped here). The task
//! list is frozen into the manifest, so adding a task to the backlog never renumbers a running Job.
//!
//! vouch's exit codes become the `podFailurePolicy`: 1 (rejected) and 2 (usage) fail their index for good,
//! 3 (infrastructure) is `Count`, retried up to `backoffLimitPerIndex` (`Ignore` would retry a dead model
//! server forever without counting), and a pod the cluster disrupted (preemption, drain) is `Ignore`d.
//! Secrets (the model's API key, the forge token, the clone token) reach the pod only as `secretKeyRef`s:
//! this module takes secret *names and keys*, never values, and refuses what looks like a value.
//! The manifest is built from the `k8s-openapi` structs, so its shape is the API's by construction.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{
    Job, JobSpec as KubeJobSpec, PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement,
    PodFailurePolicyOnPodConditionsPattern, PodFailurePolicyRule,
};
use k8s_openapi::api::core::v1::{
    Container, EmptyDirVolumeSource, EnvVar, EnvVarSource, PodSpec, PodTemplateSpec,
    ResourceRequirements, SecretKeySelector, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::error::{EXIT_FAIL, EXIT_INFRA, EXIT_USAGE};

/// The variable the Job controller sets to a pod's completion index.
pub const INDEX_ENV: &str = "JOB_COMPLETION_INDEX";
/// The name of the container that runs vouch (the exit-code rules name it).
pub const CONTAINER: &str = "vouch";
/// The name of the init container that clones the repository.
pub const CLONE_CONTAINER: &str = "clone";
/// Where the pod's scratch volume (repository, vouch's data and cache) is mounted.
pub const WORK_DIR: &str = "/work";
/// Where the repository is cloned, and the vouch container's working directory then.
pub const REPO_DIR: &str = "/work/repo";
/// The variable the clone token is in, inside the init container.
pub const CLONE_TOKEN_ENV: &str = "VOUCH_CLONE_TOKEN";
/// The annotation holding the frozen task list (also in the args; this one is for `kubectl describe`).
pub const TASK_IDS_ANNOTATION: &str = "vouch/task-ids";
/// The most indexes a Job with `backoffLimitPerIndex` may have.
pub const MAX_TASKS: usize = 100_000;
/// The longest task list, joined with commas: Kubernetes caps a resource's annotations at 256 KiB in all,
/// and the list is an annotation (the args hold it too; the whole Job must stay well under etcd's 1.5 MiB).
pub const MAX_TASK_IDS_BYTES: usize = 200 * 1024;
/// Retries of one index after an infrastructure failure (exit 3) or an unclassified crash.
pub const DEFAULT_BACKOFF_LIMIT_PER_INDEX: i32 = 2;
/// The default CPU request: one core (the gate builds and tests).
pub const DEFAULT_CPU_REQUEST: &str = "1";
/// The default memory request.
pub const DEFAULT_MEMORY_REQUEST: &str = "2Gi";
/// The default memory limit (no CPU limit by default: throttling only slows the builds down).
pub const DEFAULT_MEMORY_LIMIT: &str = "4Gi";

/// The shell script the init container runs: `sh -c SCRIPT vouch-clone URL REVISION DIR`. URL, revision and
/// directory are positional parameters, never spliced into the script.
const CLONE_SCRIPT: &str = r#"set -eu
git clone --quiet --no-checkout -- "$1" "$3"
git -C "$3" checkout --quiet --detach "$2"
"#;

/// The credential helper that hands git the token from `VOUCH_CLONE_TOKEN` (a git config value; git runs it
/// with `sh`): the token is never in an argument, a URL or the clone's config.
pub const CLONE_CREDENTIAL_HELPER: &str = r#"!f() { test "$1" = get || exit 0; echo username=x-access-token; echo "password=$VOUCH_CLONE_TOKEN"; }; f"#;

/// [`CLONE_SCRIPT`] with [`CLONE_CREDENTIAL_HELPER`] given to the clone only.
fn clone_script_with_token() -> String {
    CLONE_SCRIPT.replacen(
        "git clone",
        &format!(
            "git -c credential.helper= -c 'credential.helper={CLONE_CREDENTIAL_HELPER}' clone"
        ),
        1,
    )
}

/// What the Job runs: the backlog, the image, the model, the secrets and the resources.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpec {
    /// The Job's name (a DNS-1123 label: pods are `<name>-<index>-<random>`).
    pub name: String,
    pub namespace: Option<String>,
    /// An image with vouch, git and the toolchains the gate's profile needs.
    pub image: String,
    /// The frozen task list: index I runs `task_ids[I]`.
    pub task_ids: Vec<String>,
    /// The source and run arguments every pod passes to `vouch backlog` (e.g. `--label ready --open-pr`).
    pub backlog_args: Vec<String>,
    /// Pods at once [default: the cluster's, 1].
    pub parallelism: Option<i32>,
    /// Retries of one index (exit 3 or an unclassified crash).
    pub backoff_limit_per_index: i32,
    pub resources: Resources,
    /// `VOUCH_ENDPOINT` in the pod.
    pub endpoint: Option<String>,
    /// `VOUCH_MODEL` in the pod.
    pub model: Option<String>,
    /// Variables set from Secrets (the model's API key, the forge token).
    pub secrets: Vec<SecretEnv>,
    /// Which of `secrets` holds the model's API key: set as `VOUCH_API_KEY_ENV` (a name, not the key).
    pub api_key_env: Option<String>,
    /// How the pod gets the repository [default: it is the image's working directory].
    pub repo: Option<RepoClone>,
}

impl JobSpec {
    /// A spec with the defaults: no parallelism set, the default retries and resources, no model settings,
    /// no secrets, the repository in the image.
    pub fn new(name: &str, image: &str, task_ids: Vec<String>) -> JobSpec {
        JobSpec {
            name: name.to_string(),
            namespace: None,
            image: image.to_string(),
            task_ids,
            backlog_args: Vec::new(),
            parallelism: None,
            backoff_limit_per_index: DEFAULT_BACKOFF_LIMIT_PER_INDEX,
            resources: Resources::default(),
            endpoint: None,
            model: None,
            secrets: Vec::new(),
            api_key_env: None,
            repo: None,
        }
    }
}

/// A variable of the pod set from a key of a Secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretEnv {
    /// The variable's name in the pod (e.g. `OPENAI_API_KEY`, `GITHUB_TOKEN`).
    pub env: String,
    /// The Secret's name.
    pub secret: String,
    /// The key in the Secret.
    pub key: String,
}

/// A key of a Secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretKey {
    /// The Secret's name.
    pub secret: String,
    /// The key in the Secret.
    pub key: String,
}

/// CPU and memory requests and limits, as Kubernetes quantities (`500m`, `2Gi`); `None` leaves one unset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resources {
    pub cpu_request: Option<String>,
    pub memory_request: Option<String>,
    pub cpu_limit: Option<String>,
    pub memory_limit: Option<String>,
}

impl Default for Resources {
    fn default() -> Resources {
        Resources {
            cpu_request: Some(DEFAULT_CPU_REQUEST.to_string()),
            memory_request: Some(DEFAULT_MEMORY_REQUEST.to_string()),
            cpu_limit: None,
            memory_limit: Some(DEFAULT_MEMORY_LIMIT.to_string()),
        }
    }
}

/// The repository cloned by an init container into the pod's scratch volume at [`REPO_DIR`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepoClone {
    /// The clone URL, without credentials.
    pub url: String,
    /// The revision checked out (detached): a branch, tag or sha.
    pub revision: String,
    /// The token for a private repository, as a Secret reference (the init container reads it as
    /// [`CLONE_TOKEN_ENV`]).
    pub token: Option<SecretKey>,
    /// The init container's image [default: the Job's image, which has git].
    pub image: Option<String>,
}

/// Why a [`JobSpec`] cannot become a Job. Each is a usage error: the input is wrong, and the message says how.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum K8sError {
    #[error("the backlog has no tasks: a Job needs at least one index")]
    NoTasks,
    #[error("{count} tasks: an Indexed Job with backoffLimitPerIndex holds at most {MAX_TASKS}; split the backlog with --shard")]
    TooManyTasks { count: usize },
    #[error("the task ids take {bytes} bytes, more than the {MAX_TASK_IDS_BYTES} one Job can hold; split the backlog with --shard")]
    TaskListTooLong { bytes: usize },
    #[error("task id `{id}` is listed twice: each index runs one task once")]
    DuplicateTask { id: String },
    #[error("task id `{id}` cannot be passed in --task-ids: {reason}")]
    BadTaskId { id: String, reason: &'static str },
    #[error("{field} `{value}` is not a DNS-1123 label (at most 63 characters of a-z, 0-9 and `-`, starting and ending with a letter or digit)")]
    NotDnsLabel { field: &'static str, value: String },
    #[error("Secret name `{value}` is not a DNS-1123 subdomain (lowercase a-z, 0-9, `-` and `.`, at most 253 characters)")]
    BadSecretName { value: String },
    #[error("Secret key `{value}` may hold only a-z, A-Z, 0-9, `-`, `_` and `.`")]
    BadSecretKey { value: String },
    #[error("`{value}` is not an environment variable name (a letter or `_`, then letters, digits and `_`)")]
    BadEnvName { value: String },
    #[error("{field} looks like a token, not the name of a variable or Secret: pass the name; the value stays in a Secret")]
    LooksLikeSecretValue { field: &'static str },
    #[error("the clone URL carries credentials: give the URL without them and the token as a Secret (repo token)")]
    CredentialsInUrl,
    #[error("api_key_env `{env}` is none of the secret variables: add a SecretEnv for it")]
    ApiKeyNotASecret { env: String },
    #[error("variable `{env}` is set twice")]
    DuplicateEnv { env: String },
    #[error("{field} `{value}` is not a Kubernetes quantity (e.g. 500m, 2, 1.5, 512Mi, 4Gi)")]
    BadQuantity { field: &'static str, value: String },
    #[error("{field} must be {min} or more, not {value}")]
    TooSmall {
        field: &'static str,
        value: i32,
        min: i32,
    },
    #[error("{field} is empty")]
    Empty { field: &'static str },
    #[error("cannot write the manifest as YAML: {0}")]
    Render(String),
}

/// The Indexed Job for `spec`, or why the spec is wrong.
pub fn indexed_job(spec: &JobSpec) -> Result<Job, K8sError> {
    validate(spec)?;
    let labels = labels(&spec.name);
    let annotations = BTreeMap::from([(TASK_IDS_ANNOTATION.to_string(), spec.task_ids.join(","))]);
    let completions = i32::try_from(spec.task_ids.len()).map_err(|_| K8sError::TooManyTasks {
        count: spec.task_ids.len(),
    })?;

    let work_mount = VolumeMount {
        name: "work".to_string(),
        mount_path: WORK_DIR.to_string(),
        ..VolumeMount::default()
    };
    let container = Container {
        name: CONTAINER.to_string(),
        image: Some(spec.image.clone()),
        command: Some(vec![escape("vouch")]),
        args: Some(container_args(spec)),
        env: Some(container_env(spec)),
        resources: Some(resources(&spec.resources)?),
        working_dir: spec.repo.as_ref().map(|_| escape(REPO_DIR)),
        volume_mounts: Some(vec![work_mount.clone()]),
        ..Container::default()
    };
    let init_containers = spec
        .repo
        .as_ref()
        .map(|repo| vec![clone_container(repo, &spec.image, work_mount)]);

    let template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels.clone()),
            annotations: Some(annotations.clone()),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            restart_policy: Some("Never".to_string()),
            init_containers,
            containers: vec![container],
            volumes: Some(vec![Volume {
                name: "work".to_string(),
                empty_dir: Some(EmptyDirVolumeSource::default()),
                ..Volume::default()
            }]),
            ..PodSpec::default()
        }),
    };

    Ok(Job {
        metadata: ObjectMeta {
            name: Some(spec.name.clone()),
            namespace: spec.namespace.clone(),
            labels: Some(labels),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        },
        spec: Some(KubeJobSpec {
            completion_mode: Some("Indexed".to_string()),
            completions: Some(completions),
            parallelism: spec.parallelism,
            backoff_limit_per_index: Some(spec.backoff_limit_per_index),
            pod_failure_policy: Some(pod_failure_policy()),
            template,
            ..KubeJobSpec::default()
        }),
        status: None,
    })
}

/// The Job as a YAML document for `kubectl apply -f`.
pub fn render(job: &Job) -> Result<String, K8sError> {
    serde_norway::to_string(job).map_err(|e| K8sError::Render(e.to_string()))
}

/// The rules, first match wins: a disrupted pod is not the task's fault; 1 (rejected) and 2 (usage) are final
/// for their index; 3 (infrastructure) counts against `backoffLimitPerIndex` and is retried until then.
pub fn pod_failure_policy() -> PodFailurePolicy {
    let on_exit = |code: i32, action: &str| PodFailurePolicyRule {
        action: action.to_string(),
        on_exit_codes: Some(PodFailurePolicyOnExitCodesRequirement {
            container_name: Some(CONTAINER.to_string()),
            operator: "In".to_string(),
            values: vec![code],
        }),
        on_pod_conditions: None,
    };
    PodFailurePolicy {
        rules: vec![
            PodFailurePolicyRule {
                action: "Ignore".to_string(),
                on_exit_codes: None,
                on_pod_conditions: Some(vec![PodFailurePolicyOnPodConditionsPattern {
                    type_: "DisruptionTarget".to_string(),
                    status: "True".to_string(),
                }]),
            },
            on_exit(EXIT_FAIL, "FailIndex"),
            on_exit(EXIT_USAGE, "FailIndex"),
            on_exit(EXIT_INFRA, "Count"),
        ],
    }
}

/// `backlog <backlog_args> --index $(JOB_COMPLETION_INDEX) --task-ids a,b,c`, each literal escaped for the
/// kubelet's `$(VAR)` expansion. The index goes before a `--`: what follows it is `vouch run`'s.
fn container_args(spec: &JobSpec) -> Vec<String> {
    let split = spec
        .backlog_args
        .iter()
        .position(|a| a == "--")
        .unwrap_or(spec.backlog_args.len());
    let (own, run) = spec.backlog_args.split_at(split);
    let mut args = vec![escape("backlog")];
    args.extend(own.iter().map(|a| escape(a)));
    args.push(escape("--index"));
    args.push(format!("$({INDEX_ENV})"));
    args.push(escape("--task-ids"));
    args.push(escape(&spec.task_ids.join(",")));
    args.extend(run.iter().map(|a| escape(a)));
    args
}

fn container_env(spec: &JobSpec) -> Vec<EnvVar> {
    let plain = |name: &str, value: &str| EnvVar {
        name: name.to_string(),
        value: Some(escape(value)),
        value_from: None,
    };
    let mut env = Vec::new();
    if let Some(endpoint) = &spec.endpoint {
        env.push(plain("VOUCH_ENDPOINT", endpoint));
    }
    if let Some(model) = &spec.model {
        env.push(plain("VOUCH_MODEL", model));
    }
    if let Some(name) = &spec.api_key_env {
        env.push(plain("VOUCH_API_KEY_ENV", name));
    }
    env.push(plain("VOUCH_DATA", &format!("{WORK_DIR}/data")));
    env.push(plain("VOUCH_CACHE", &format!("{WORK_DIR}/cache")));
    env.extend(
        spec.secrets
            .iter()
            .map(|s| secret_env(&s.env, &s.secret, &s.key)),
    );
    env
}

fn secret_env(name: &str, secret: &str, key: &str) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value: None,
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: secret.to_string(),
                key: key.to_string(),
                optional: Some(false),
            }),
            ..EnvVarSource::default()
        }),
    }
}

fn clone_container(repo: &RepoClone, image: &str, mount: VolumeMount) -> Container {
    let (script, env) = match &repo.token {
        Some(token) => (
            clone_script_with_token(),
            Some(vec![secret_env(CLONE_TOKEN_ENV, &token.secret, &token.key)]),
        ),
        None => (CLONE_SCRIPT.to_string(), None),
    };
    Container {
        name: CLONE_CONTAINER.to_string(),
        image: Some(repo.image.clone().unwrap_or_else(|| image.to_string())),
        command: Some(
            [
                "sh",
                "-c",
                &script,
                "vouch-clone",
                &repo.url,
                &repo.revision,
                REPO_DIR,
            ]
            .iter()
            .map(|s| escape(s))
            .collect(),
        ),
        env,
        volume_mounts: Some(vec![mount]),
        ..Container::default()
    }
}

fn resources(r: &Resources) -> Result<ResourceRequirements, K8sError> {
    let map = |pairs: [(&'static str, &'static str, &Option<String>); 2]| {
        let mut out = BTreeMap::new();
        for (resource, field, value) in pairs {
            if let Some(value) = value {
                if !is_quantity(value) {
                    return Err(K8sError::BadQuantity {
                        field,
                        value: value.clone(),
                    });
                }
                out.insert(resource.to_string(), Quantity(value.clone()));
            }
        }
        Ok((!out.is_empty()).then_some(out))
    };
    Ok(ResourceRequirements {
        requests: map([
            ("cpu", "cpu request", &r.cpu_request),
            ("memory", "memory request", &r.memory_request),
        ])?,
        limits: map([
            ("cpu", "cpu limit", &r.cpu_limit),
            ("memory", "memory limit", &r.memory_limit),
        ])?,
        claims: None,
    })
}

fn labels(name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), "vouch".to_string()),
        (
            "app.kubernetes.io/component".to_string(),
            "backlog".to_string(),
        ),
        ("app.kubernetes.io/instance".to_string(), name.to_string()),
        (
            "app.kubernetes.io/managed-by".to_string(),
            "vouch".to_string(),
        ),
    ])
}

/// A literal for a field the kubelet expands: `$` is written `$$`, so no `$(NAME)` in it is ever replaced.
pub fn escape(literal: &str) -> String {
    literal.replace('$', "$$")
}

fn validate(spec: &JobSpec) -> Result<(), K8sError> {
    if spec.task_ids.is_empty() {
        return Err(K8sError::NoTasks);
    }
    if spec.task_ids.len() > MAX_TASKS {
        return Err(K8sError::TooManyTasks {
            count: spec.task_ids.len(),
        });
    }
    let bytes = spec.task_ids.iter().map(|id| id.len() + 1).sum::<usize>() - 1;
    if bytes > MAX_TASK_IDS_BYTES {
        return Err(K8sError::TaskListTooLong { bytes });
    }
    let mut seen = std::collections::BTreeSet::new();
    for id in &spec.task_ids {
        let reason = if id.is_empty() {
            Some("it is empty")
        } else if id.contains(',') {
            Some("it contains a comma, the list's separator")
        } else if id.chars().any(char::is_whitespace) {
            Some("it contains white space")
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(K8sError::BadTaskId {
                id: id.clone(),
                reason,
            });
        }
        if !seen.insert(id.as_str()) {
            return Err(K8sError::DuplicateTask { id: id.clone() });
        }
    }
    dns_label("Job name", &spec.name)?;
    if let Some(ns) = &spec.namespace {
        dns_label("namespace", ns)?;
    }
    if spec.image.trim().is_empty() {
        return Err(K8sError::Empty { field: "image" });
    }
    if let Some(p) = spec.parallelism {
        at_least("parallelism", p, 1)?;
    }
    at_least("backoff_limit_per_index", spec.backoff_limit_per_index, 0)?;

    let mut envs = std::collections::BTreeSet::new();
    for s in &spec.secrets {
        env_name(&s.env)?;
        secret_ref(&s.secret, &s.key)?;
        if !envs.insert(s.env.as_str()) || is_reserved(&s.env) {
            return Err(K8sError::DuplicateEnv { env: s.env.clone() });
        }
    }
    if let Some(name) = &spec.api_key_env {
        env_name(name)?;
        if !envs.contains(name.as_str()) {
            return Err(K8sError::ApiKeyNotASecret { env: name.clone() });
        }
    }
    if let Some(endpoint) = &spec.endpoint {
        if url_has_credentials(endpoint) {
            return Err(K8sError::LooksLikeSecretValue {
                field: "the endpoint's user info",
            });
        }
    }
    if let Some(repo) = &spec.repo {
        if repo.url.trim().is_empty() {
            return Err(K8sError::Empty { field: "repo url" });
        }
        if repo.revision.trim().is_empty() {
            return Err(K8sError::Empty {
                field: "repo revision",
            });
        }
        if url_has_credentials(&repo.url) {
            return Err(K8sError::CredentialsInUrl);
        }
        if let Some(token) = &repo.token {
            secret_ref(&token.secret, &token.key)?;
        }
    }
    Ok(())
}

/// The variables this module sets itself.
fn is_reserved(env: &str) -> bool {
    [
        "VOUCH_ENDPOINT",
        "VOUCH_MODEL",
        "VOUCH_API_KEY_ENV",
        "VOUCH_DATA",
        "VOUCH_CACHE",
        INDEX_ENV,
    ]
    .contains(&env)
}

fn at_least(field: &'static str, value: i32, min: i32) -> Result<(), K8sError> {
    if value < min {
        return Err(K8sError::TooSmall { field, value, min });
    }
    Ok(())
}

fn dns_label(field: &'static str, value: &str) -> Result<(), K8sError> {
    let ok = !value.is_empty()
        && value.len() <= 63
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !value.starts_with('-')
        && !value.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(K8sError::NotDnsLabel {
            field,
            value: value.to_string(),
        })
    }
}

fn secret_ref(secret: &str, key: &str) -> Result<(), K8sError> {
    if looks_like_token(secret) {
        return Err(K8sError::LooksLikeSecretValue {
            field: "the Secret's name",
        });
    }
    if looks_like_token(key) {
        return Err(K8sError::LooksLikeSecretValue {
            field: "the Secret's key",
        });
    }
    let subdomain = !secret.is_empty()
        && secret.len() <= 253
        && secret.split('.').all(|part| dns_label("", part).is_ok());
    if !subdomain {
        return Err(K8sError::BadSecretName {
            value: secret.to_string(),
        });
    }
    let key_ok = !key.is_empty()
        && key.len() <= 253
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !key_ok {
        return Err(K8sError::BadSecretKey {
            value: key.to_string(),
        });
    }
    Ok(())
}

fn env_name(name: &str) -> Result<(), K8sError> {
    if looks_like_token(name) {
        return Err(K8sError::LooksLikeSecretValue {
            field: "a secret variable's name",
        });
    }
    let mut bytes = name.bytes();
    let ok = matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(K8sError::BadEnvName {
            value: name.to_string(),
        })
    }
}

/// A token's well-known prefix (GitHub, GitLab, OpenAI-style, Slack, Gitea's 40 hex digits), or a long
/// run of mixed letters and digits no one names a variable or Secret with.
fn looks_like_token(s: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
        "glpat-",
        "sk-",
        "xoxb-",
        "xoxp-",
        "hf_",
    ];
    if PREFIXES.iter().any(|p| s.starts_with(p)) {
        return true;
    }
    let hex40 = s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit());
    let mixed = s.len() >= 32
        && s.bytes().any(|b| b.is_ascii_lowercase())
        && s.bytes().any(|b| b.is_ascii_uppercase())
        && s.bytes().any(|b| b.is_ascii_digit());
    hex40 || mixed
}

/// `scheme://user:password@host...` (a user name alone is not a credential).
fn url_has_credentials(url: &str) -> bool {
    let Some((_, rest)) = url.split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    authority
        .rsplit_once('@')
        .is_some_and(|(userinfo, _)| userinfo.contains(':'))
}

/// Kubernetes' quantity grammar: a decimal number and an optional binary (Ki..Ei), decimal (n, u, m, k, M..E)
/// or exponent (e3, E-2) suffix.
fn is_quantity(s: &str) -> bool {
    let digits_end = s
        .char_indices()
        .find(|(i, c)| !(c.is_ascii_digit() || *c == '.' || (*i == 0 && matches!(c, '+' | '-'))))
        .map_or(s.len(), |(i, _)| i);
    let (number, suffix) = s.split_at(digits_end);
    let number = number.trim_start_matches(['+', '-']);
    let number_ok = !number.is_empty()
        && number.matches('.').count() <= 1
        && number.bytes().any(|b| b.is_ascii_digit());
    let suffix_ok = matches!(
        suffix,
        "" | "Ki"
            | "Mi"
            | "Gi"
            | "Ti"
            | "Pi"
            | "Ei"
            | "n"
            | "u"
            | "m"
            | "k"
            | "M"
            | "G"
            | "T"
            | "P"
            | "E"
    ) || suffix
        .strip_prefix(['e', 'E'])
        .map(|exp| exp.trim_start_matches(['+', '-']))
        .is_some_and(|exp| !exp.is_empty() && exp.bytes().all(|b| b.is_ascii_digit()));
    number_ok && suffix_ok
}

#[cfg(test)]
mod tests;
