//! `vouch backlog --emit k8s`: the plan as a Kubernetes Indexed Job on stdout. The pods repeat this
//! invocation's source and run arguments; the task ids are frozen into the manifest.

use std::path::Path;

use anyhow::{Context, Result};

use crate::backlog::k8s::{self, JobSpec, RepoClone, Resources, SecretEnv, SecretKey};
use crate::backlog::BacklogTask;
use crate::cli::{BacklogArgs, OpenPr};
use crate::error::{VouchError, EXIT_PASS};

use super::pr;

/// The Secret the model's API key is read from when `--api-key-env` names no `--secret`.
const MODEL_SECRET: (&str, &str) = ("vouch-model", "api-key");
/// The Secret the forge token is read from when no `--secret` sets the forge's variable.
const FORGE_SECRET: (&str, &str) = ("vouch-forge", "token");

pub(super) fn emit(args: &BacklogArgs, repo: &Path, plan: &[BacklogTask]) -> Result<i32> {
    let spec = job_spec(args, repo, plan)?;
    let job = k8s::indexed_job(&spec).map_err(|e| VouchError::usage(e.to_string()))?;
    let yaml = k8s::render(&job)?;
    print!("{yaml}");
    eprintln!(
        "vouch backlog: a Job of {} task(s) on stdout; apply it with `kubectl apply -f FILE`",
        spec.task_ids.len()
    );
    Ok(EXIT_PASS)
}

fn job_spec(args: &BacklogArgs, repo: &Path, plan: &[BacklogTask]) -> Result<JobSpec> {
    let k = &args.k8s;
    let image = k.image.clone().ok_or_else(|| {
        VouchError::usage(
            "--emit k8s needs --image: an image with vouch, git and the toolchains the gate needs",
        )
    })?;
    let ids: Vec<String> = plan.iter().map(|t| t.id.clone()).collect();
    let name = k.job_name.clone().unwrap_or_else(|| default_name(args));
    let mut spec = JobSpec::new(&name, &image, ids);
    spec.namespace = k.namespace.clone();
    spec.backlog_args = pod_args(args, repo)?;
    spec.parallelism = k
        .parallelism
        .or(args.jobs.and_then(|j| i32::try_from(j).ok()));
    spec.backoff_limit_per_index = k.backoff_limit_per_index;
    let defaults = Resources::default();
    spec.resources = Resources {
        cpu_request: k.cpu.clone().or(defaults.cpu_request),
        memory_request: k.memory.clone().or(defaults.memory_request),
        cpu_limit: defaults.cpu_limit,
        memory_limit: k.memory_limit.clone().or(defaults.memory_limit),
    };
    spec.endpoint = args.endpoint.clone();
    spec.model = args.model.clone();
    spec.secrets = k
        .secrets
        .iter()
        .map(|s| parse_secret_env(s))
        .collect::<Result<_>>()?;
    if let Some(var) = &k.api_key_env {
        add_default(&mut spec.secrets, var, MODEL_SECRET);
        spec.api_key_env = Some(var.clone());
    }
    if args.label.is_some() || args.open_pr.is_some() {
        let setup = pr::ForgeSetup::load(repo, &args.forge, args.draft)?;
        let (target, _) = setup.target(repo, None)?;
        let var = setup
            .token_env
            .clone()
            .unwrap_or_else(|| target.forge.token_vars()[0].to_string());
        add_default(&mut spec.secrets, &var, FORGE_SECRET);
    }
    if let Some(url) = &k.clone {
        let revision = match &k.revision {
            Some(r) => r.clone(),
            None => head_commit(repo)?,
        };
        spec.repo = Some(RepoClone {
            url: url.clone(),
            revision,
            token: k
                .clone_token_secret
                .as_deref()
                .map(parse_secret_key)
                .transpose()?,
            image: None,
        });
    }
    Ok(spec)
}

/// The arguments every pod passes to `vouch backlog`: the source and run settings, not this machine's
/// paths, shard or output files (the ids are frozen; the pod's repository is its working directory).
fn pod_args(args: &BacklogArgs, repo: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    if let Some(dir) = &args.dir {
        let abs = std::path::absolute(dir).with_context(|| format!("locate {}", dir.display()))?;
        let repo_abs = std::path::absolute(repo)?;
        let rel = abs.strip_prefix(&repo_abs).map_err(|_| {
            VouchError::usage(format!(
                "the task folder {} is outside the repository {}: a pod only has the repository",
                dir.display(),
                repo.display()
            ))
        })?;
        // The pod's working directory is the repository.
        out.push(rel.to_string_lossy().into_owned());
    }
    let mut flag = |name: &str, value: Option<String>| {
        if let Some(v) = value {
            out.push(format!("--{name}"));
            out.push(v);
        }
    };
    flag("label", args.label.clone());
    if args.label.is_some() {
        flag("claim-label", Some(args.claim_label.clone()));
    }
    flag("attempts", Some(args.attempts.to_string()));
    flag("escalate", args.escalate.clone());
    let f = &args.forge;
    flag("forge", f.forge.map(|x| x.name().to_string()));
    flag("forge-repo", f.forge_repo.clone());
    flag("api-url", f.api_url.clone());
    flag("remote", f.remote.clone());
    flag("token-env", f.token_env.clone());
    if f.ca_file.is_some() {
        return Err(VouchError::usage(
            "--ca-file names a file on this machine: in a pod, put the CA bundle in the image and set SSL_CERT_FILE",
        )
        .into());
    }
    match args.open_pr {
        Some(OpenPr::Verified) => out.push("--open-pr=verified".into()),
        Some(OpenPr::Always) => out.push("--open-pr=always".into()),
        None => {}
    }
    if args.draft {
        out.push("--draft".into());
    }
    if !args.run_args.is_empty() {
        out.push("--".into());
        out.extend(args.run_args.iter().cloned());
    }
    Ok(out)
}

fn default_name(args: &BacklogArgs) -> String {
    let base = match (&args.label, &args.dir) {
        (Some(l), _) => l.clone(),
        (None, Some(d)) => d
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        (None, None) => "tasks".into(),
    };
    let mut name: String = format!("backlog-{base}")
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    name.truncate(52);
    name.trim_end_matches('-').to_string()
}

/// `ENV=SECRET/KEY`.
fn parse_secret_env(s: &str) -> Result<SecretEnv> {
    let (env, rest) = s.split_once('=').ok_or_else(|| {
        VouchError::usage(format!(
            "bad --secret `{}`: give it as ENV=SECRET/KEY, e.g. MODEL_KEY=vouch-model/api-key",
            s.split('=').next().unwrap_or_default()
        ))
    })?;
    let key = parse_secret_key(rest)?;
    Ok(SecretEnv {
        env: env.to_string(),
        secret: key.secret,
        key: key.key,
    })
}

/// `SECRET/KEY`. The text is a name, never a value: it is not echoed whole in the error.
fn parse_secret_key(s: &str) -> Result<SecretKey> {
    let (secret, key) = s.split_once('/').ok_or_else(|| {
        VouchError::usage("a Secret key is given as SECRET/KEY, e.g. vouch-model/api-key")
    })?;
    Ok(SecretKey {
        secret: secret.to_string(),
        key: key.to_string(),
    })
}

fn add_default(secrets: &mut Vec<SecretEnv>, env: &str, (secret, key): (&str, &str)) {
    if !secrets.iter().any(|s| s.env == env) {
        secrets.push(SecretEnv {
            env: env.to_string(),
            secret: secret.to_string(),
            key: key.to_string(),
        });
    }
}

fn head_commit(repo: &Path) -> Result<String> {
    let r = git2::Repository::discover(repo)
        .with_context(|| format!("open the repository at {}", repo.display()))?;
    let head = r
        .head()
        .and_then(|h| h.peel_to_commit())
        .context("read the repository's HEAD commit (give --revision)")?;
    Ok(head.id().to_string())
}
