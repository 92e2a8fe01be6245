use super::*;

fn spec() -> JobSpec {
    let mut spec = JobSpec::new(
        "backlog-ready",
        "ghcr.io/team/vouch:1",
        vec!["add-subtract".to_string(), "team/app#12".to_string()],
    );
    spec.backlog_args = vec!["--label".to_string(), "ready".to_string()];
    spec.secrets = vec![SecretEnv {
        env: "OPENAI_API_KEY".to_string(),
        secret: "vouch-model".to_string(),
        key: "api-key".to_string(),
    }];
    spec.api_key_env = Some("OPENAI_API_KEY".to_string());
    spec
}

fn err(spec: &JobSpec) -> K8sError {
    match indexed_job(spec) {
        Ok(_) => panic!("expected an error for {spec:?}"),
        Err(e) => e,
    }
}

#[test]
fn a_job_has_one_index_per_task_and_never_restarts_its_pods() {
    let job = indexed_job(&spec()).unwrap();
    let js = job.spec.unwrap();
    assert_eq!(js.completion_mode.as_deref(), Some("Indexed"));
    assert_eq!(js.completions, Some(2));
    assert_eq!(
        js.backoff_limit_per_index,
        Some(DEFAULT_BACKOFF_LIMIT_PER_INDEX)
    );
    assert_eq!(js.backoff_limit, None);
    let pod = js.template.spec.unwrap();
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
    assert!(pod.init_containers.is_none());
    assert_eq!(pod.containers[0].working_dir, None);
}

#[test]
fn the_exit_codes_map_to_final_final_retried_and_disruptions_are_ignored() {
    let rules: Vec<(String, Option<Vec<i32>>, Option<String>)> = pod_failure_policy()
        .rules
        .into_iter()
        .map(|r| {
            (
                r.action,
                r.on_exit_codes.map(|c| {
                    assert_eq!(c.operator, "In");
                    assert_eq!(c.container_name.as_deref(), Some(CONTAINER));
                    c.values
                }),
                r.on_pod_conditions
                    .map(|p| format!("{}={}", p[0].type_, p[0].status)),
            )
        })
        .collect();
    assert_eq!(
        rules,
        vec![
            ("Ignore".into(), None, Some("DisruptionTarget=True".into())),
            ("FailIndex".into(), Some(vec![1]), None),
            ("FailIndex".into(), Some(vec![2]), None),
            ("Count".into(), Some(vec![3]), None),
        ]
    );
}

#[test]
fn literal_dollars_are_escaped_and_the_index_is_not() {
    let mut s = spec();
    s.backlog_args = vec!["--label".into(), "cost$(HOME)".into()];
    let job = indexed_job(&s).unwrap();
    let args = job.spec.unwrap().template.spec.unwrap().containers[0]
        .args
        .clone()
        .unwrap();
    assert_eq!(
        args,
        [
            "backlog",
            "--label",
            "cost$$(HOME)",
            "--index",
            "$(JOB_COMPLETION_INDEX)",
            "--task-ids",
            "add-subtract,team/app#12"
        ]
    );
}

#[test]
fn a_cloned_repository_is_the_working_directory_and_its_token_a_secret_reference() {
    let mut s = spec();
    s.repo = Some(RepoClone {
        url: "https://github.com/team/app.git".into(),
        revision: "main".into(),
        token: Some(SecretKey {
            secret: "forge".into(),
            key: "token".into(),
        }),
        image: None,
    });
    let pod = indexed_job(&s)
        .unwrap()
        .spec
        .unwrap()
        .template
        .spec
        .unwrap();
    assert_eq!(pod.containers[0].working_dir.as_deref(), Some(REPO_DIR));
    let init = &pod.init_containers.unwrap()[0];
    assert_eq!(init.image.as_deref(), Some("ghcr.io/team/vouch:1"));
    let env = init.env.clone().unwrap();
    assert_eq!(env.len(), 1);
    assert_eq!(env[0].name, CLONE_TOKEN_ENV);
    assert_eq!(env[0].value, None);
    let r = env[0].value_from.clone().unwrap().secret_key_ref.unwrap();
    assert_eq!((r.name.as_str(), r.key.as_str()), ("forge", "token"));
    let cmd = init.command.clone().unwrap();
    assert_eq!(cmd[..2], ["sh", "-c"]);
    assert!(cmd[2].contains("credential.helper="), "{}", cmd[2]);
    assert_eq!(
        cmd[3..],
        [
            "vouch-clone",
            "https://github.com/team/app.git",
            "main",
            REPO_DIR
        ]
    );
}

#[test]
fn an_empty_backlog_is_refused() {
    let mut s = spec();
    s.task_ids.clear();
    assert_eq!(err(&s), K8sError::NoTasks);
}

#[test]
fn a_task_list_longer_than_a_job_can_hold_is_refused() {
    let mut s = spec();
    s.task_ids = (0..20_000).map(|i| format!("team/app#{i:05}")).collect();
    let bytes = 20_000 * 15 - 1;
    assert_eq!(err(&s), K8sError::TaskListTooLong { bytes });
    s.task_ids.truncate(MAX_TASK_IDS_BYTES / 15);
    assert!(indexed_job(&s).is_ok());
}

#[test]
fn task_ids_that_cannot_travel_in_the_list_are_refused() {
    for (id, dup) in [
        ("a,b", false),
        ("", false),
        ("a b", false),
        ("add-subtract", true),
    ] {
        let mut s = spec();
        s.task_ids.push(id.to_string());
        let e = err(&s);
        if dup {
            assert_eq!(e, K8sError::DuplicateTask { id: id.into() });
        } else {
            assert!(matches!(e, K8sError::BadTaskId { .. }), "{id}: {e}");
        }
    }
}

#[test]
fn names_that_are_not_dns_labels_are_refused() {
    for name in ["Backlog", "-x", "x-", "a_b", "", &"a".repeat(64)] {
        let mut s = spec();
        s.name = name.to_string();
        assert_eq!(
            err(&s),
            K8sError::NotDnsLabel {
                field: "Job name",
                value: name.to_string()
            }
        );
    }
    let mut s = spec();
    s.namespace = Some("Team".into());
    assert!(matches!(
        err(&s),
        K8sError::NotDnsLabel {
            field: "namespace",
            ..
        }
    ));
    let mut s = spec();
    s.name = "a".repeat(63);
    assert!(indexed_job(&s).is_ok());
}

#[test]
fn a_secret_variable_name_must_be_a_variable_name() {
    for env in ["1KEY", "API-KEY", "", "a b"] {
        let mut s = spec();
        s.secrets[0].env = env.to_string();
        s.api_key_env = None;
        assert_eq!(err(&s), K8sError::BadEnvName { value: env.into() });
    }
}

#[test]
fn a_token_given_where_a_name_belongs_is_refused_without_echoing_it() {
    let tokens = [
        "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        "github_pat_11ABCDEFG0123456789",
        "sk-proj-abcdefghijklmnop",
        "0123456789abcdef0123456789abcdef01234567",
        "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF",
    ];
    for token in tokens {
        let mut s = spec();
        s.secrets[0].env = token.to_string();
        s.api_key_env = None;
        let e = err(&s);
        assert!(
            matches!(e, K8sError::LooksLikeSecretValue { .. }),
            "{token}: {e}"
        );
        assert!(!e.to_string().contains(token));

        let mut s = spec();
        s.api_key_env = Some(token.to_string());
        assert!(matches!(err(&s), K8sError::LooksLikeSecretValue { .. }));

        let mut s = spec();
        s.secrets[0].key = token.to_string();
        assert!(matches!(err(&s), K8sError::LooksLikeSecretValue { .. }));
    }
}

#[test]
fn credentials_in_a_url_are_refused() {
    let mut s = spec();
    s.repo = Some(RepoClone {
        url: "https://x-access-token:abc@github.com/team/app.git".into(),
        revision: "main".into(),
        token: None,
        image: None,
    });
    assert_eq!(err(&s), K8sError::CredentialsInUrl);
    let mut s = spec();
    s.endpoint = Some("https://user:key@models.example/v1".into());
    assert!(matches!(err(&s), K8sError::LooksLikeSecretValue { .. }));
    s.endpoint = Some("http://git@models.example:8080/v1".into());
    assert!(indexed_job(&s).is_ok());
}

#[test]
fn the_api_key_variable_must_come_from_a_secret() {
    let mut s = spec();
    s.api_key_env = Some("OTHER_KEY".into());
    assert_eq!(
        err(&s),
        K8sError::ApiKeyNotASecret {
            env: "OTHER_KEY".into()
        }
    );
}

#[test]
fn a_secret_cannot_shadow_a_variable_vouch_sets() {
    for env in ["VOUCH_ENDPOINT", "JOB_COMPLETION_INDEX", "OPENAI_API_KEY"] {
        let mut s = spec();
        s.secrets.push(SecretEnv {
            env: env.into(),
            secret: "other".into(),
            key: "k".into(),
        });
        assert_eq!(err(&s), K8sError::DuplicateEnv { env: env.into() });
    }
}

#[test]
fn secret_names_and_keys_follow_kubernetes_rules() {
    let mut s = spec();
    s.secrets[0].secret = "Vouch_Model".into();
    assert!(matches!(err(&s), K8sError::BadSecretName { .. }));
    let mut s = spec();
    s.secrets[0].secret = "vouch.model-keys".into();
    s.secrets[0].key = "api key".into();
    assert!(matches!(err(&s), K8sError::BadSecretKey { .. }));
}

#[test]
fn quantities_follow_the_kubernetes_grammar() {
    for ok in ["1", "500m", "1.5", "2Gi", "512Mi", "1e3", "100k", "+1"] {
        assert!(is_quantity(ok), "{ok}");
    }
    for bad in ["", "Gi", "2GB", "1..5", "two", "1 Gi", "1e"] {
        assert!(!is_quantity(bad), "{bad}");
    }
    let mut s = spec();
    s.resources.memory_limit = Some("4GB".into());
    assert_eq!(
        err(&s),
        K8sError::BadQuantity {
            field: "memory limit",
            value: "4GB".into()
        }
    );
}

#[test]
fn parallelism_and_retries_must_be_sensible() {
    let mut s = spec();
    s.parallelism = Some(0);
    assert!(matches!(
        err(&s),
        K8sError::TooSmall {
            field: "parallelism",
            ..
        }
    ));
    let mut s = spec();
    s.backoff_limit_per_index = -1;
    assert!(matches!(
        err(&s),
        K8sError::TooSmall {
            field: "backoff_limit_per_index",
            ..
        }
    ));
}

#[test]
fn the_job_and_its_pods_are_labelled_and_annotated_for_kubectl() {
    let job = indexed_job(&spec()).unwrap();
    for meta in [
        &job.metadata,
        job.spec
            .as_ref()
            .unwrap()
            .template
            .metadata
            .as_ref()
            .unwrap(),
    ] {
        let labels = meta.labels.clone().unwrap();
        assert_eq!(labels["app.kubernetes.io/name"], "vouch");
        assert_eq!(labels["app.kubernetes.io/instance"], "backlog-ready");
        let notes = meta.annotations.clone().unwrap();
        assert_eq!(notes[TASK_IDS_ANNOTATION], "add-subtract,team/app#12");
    }
}
