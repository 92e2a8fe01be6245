//! Starting `llama-server` for agent use and supervising it: the command line (tools through `--jinja`, one
//! slot holding the whole context so that each turn reuses the previous prompt from the cache, the model's
//! corrected template where it has one), waiting for `/health`, stopping it with its process group.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;

use crate::error::VouchError;
use crate::process::{self, Service, ServiceSpec};

/// The context `vouch model serve` and the embedded server give the model, in tokens.
pub const DEFAULT_CONTEXT: u64 = 16384;
/// The port `vouch model serve` listens on: the one `vouch run` looks at by default.
pub const DEFAULT_PORT: u16 = 8080;
/// How long a server may take to load its model and answer `/health`.
pub const READY_TIMEOUT: Duration = Duration::from_secs(180);

/// Flash attention (`-fa`). The variants' doc comments are the flag's help.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FlashAttn {
    /// Always.
    On,
    /// Never.
    Off,
    /// llama-server decides.
    Auto,
}

impl FlashAttn {
    /// What vouch serves with unless told otherwise: off. On this project's 2-core machines under load, with
    /// the 0.5B coder and -t 1, `on` was no faster (prefill 31-34 against 33-40 tokens/s, decode 7.7-8.6
    /// against 8.4-9.3).
    pub const DEFAULT: FlashAttn = FlashAttn::Off;

    fn flag(self) -> &'static str {
        match self {
            FlashAttn::On => "on",
            FlashAttn::Off => "off",
            FlashAttn::Auto => "auto",
        }
    }
}

/// Generation threads for this machine: see [`threads_for`].
pub fn default_threads() -> u32 {
    threads_for(std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Generation threads for `cores` cores: one core is left to everything else (the agent's test runs, the
/// gate, other users) once there are more than two. Two cores get one: measured on a loaded 2-core machine
/// with the 0.5B coder, `-t 2` prefilled at 17-19 tokens/s and decoded at 1.1-1.3, `-t 1` at 33-40 and
/// 8.4-9.3 (the second thread waits on a core that is busy elsewhere).
pub fn threads_for(cores: usize) -> u32 {
    let threads = if cores <= 2 { 1 } else { cores - 1 };
    u32::try_from(threads).unwrap_or(u32::MAX)
}

/// `1 thread`, `3 threads`.
pub fn threads_text(threads: u32) -> String {
    if threads == 1 {
        "1 thread".to_string()
    } else {
        format!("{threads} threads")
    }
}

/// Everything the server's command line is made of.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    pub server: PathBuf,
    pub model: PathBuf,
    /// The model's name in the API (`/v1/models`).
    pub alias: String,
    pub host: String,
    pub port: u16,
    /// Tokens of context, all in one slot.
    pub context: u64,
    pub threads: u32,
    pub flash_attn: FlashAttn,
    /// A chat template to use instead of the model's own.
    pub template: Option<PathBuf>,
}

impl ServeOptions {
    /// The command line.
    pub fn argv(&self) -> Vec<String> {
        let mut argv = vec![
            self.server.to_string_lossy().into_owned(),
            "-m".into(),
            self.model.to_string_lossy().into_owned(),
            "--alias".into(),
            self.alias.clone(),
            "--host".into(),
            self.host.clone(),
            "--port".into(),
            self.port.to_string(),
            "--jinja".into(),
            "-np".into(),
            "1".into(),
            "-c".into(),
            self.context.to_string(),
            "-t".into(),
            self.threads.to_string(),
            "-fa".into(),
            self.flash_attn.flag().into(),
            "--no-webui".into(),
        ];
        if let Some(t) = &self.template {
            argv.extend([
                "--chat-template-file".into(),
                t.to_string_lossy().into_owned(),
            ]);
        }
        argv
    }

    /// `http://HOST:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}:{}", self.host, self.port)
    }
}

impl std::fmt::Display for FlashAttn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.flag())
    }
}

impl ServeOptions {
    /// The options for a model setup made ready, with vouch's defaults for this machine.
    pub fn for_ready(ready: &super::Ready, host: &str, port: u16, context: u64) -> ServeOptions {
        ServeOptions {
            server: ready.server.clone(),
            model: ready.model.clone(),
            alias: ready.alias.clone(),
            host: host.to_string(),
            port,
            context,
            threads: default_threads(),
            flash_attn: FlashAttn::DEFAULT,
            template: ready.template.clone(),
        }
    }
}

/// A free port on the loopback interface.
pub fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("find a free port")?;
    Ok(l.local_addr().context("find a free port")?.port())
}

/// A running llama-server; dropping it kills it.
pub struct Server {
    service: Service,
    pub url: String,
    pub log: PathBuf,
}

impl Server {
    /// Starts the server with its output in `log` and waits until `/health` answers 200.
    pub async fn start(
        opts: &ServeOptions,
        log: &Path,
        cancel: &CancellationToken,
    ) -> Result<Server> {
        if std::net::TcpListener::bind((opts.host.as_str(), opts.port)).is_err() {
            return Err(VouchError::usage_hint(
                format!("port {} on {} is in use", opts.port, opts.host),
                "another server is listening there: stop it, or give --port",
            )
            .into());
        }
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        }
        let spec = ServiceSpec {
            argv: opts.argv(),
            cwd: log.parent().unwrap_or(Path::new(".")).to_path_buf(),
            env: vec![],
            log_path: log.to_path_buf(),
        };
        let service = process::spawn_service(&spec)?;
        let mut server = Server {
            service,
            url: opts.url(),
            log: log.to_path_buf(),
        };
        match server.wait_ready(READY_TIMEOUT, cancel).await {
            Ok(()) => Ok(server),
            Err(e) => {
                server.stop().await;
                Err(e)
            }
        }
    }

    async fn wait_ready(&mut self, timeout: Duration, cancel: &CancellationToken) -> Result<()> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()
            .context("make an HTTP client")?;
        let started = Instant::now();
        loop {
            if let Some(status) = self.service.exited() {
                return Err(VouchError::infra_hint(
                    format!(
                        "llama-server exited ({status}) before it was ready:\n{}",
                        self.log_tail(15)
                    ),
                    format!("its whole log is {}", self.log.display()),
                )
                .into());
            }
            if cancel.is_cancelled() {
                return Err(VouchError::Interrupted.into());
            }
            let health = http.get(format!("{}/health", self.url)).send().await;
            if health.is_ok_and(|r| r.status().is_success()) {
                return Ok(());
            }
            if started.elapsed() > timeout {
                return Err(VouchError::infra_hint(
                    format!(
                        "llama-server did not become ready in {} s:\n{}",
                        timeout.as_secs(),
                        self.log_tail(15)
                    ),
                    format!("its whole log is {}", self.log.display()),
                )
                .into());
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(200)) => {}
                _ = cancel.cancelled() => {}
            }
        }
    }

    /// Waits until the server exits by itself (an `Err` with its log) or `cancel` fires (`Ok`).
    pub async fn supervise(&mut self, cancel: &CancellationToken) -> Result<()> {
        loop {
            if let Some(status) = self.service.exited() {
                return Err(VouchError::infra_hint(
                    format!("llama-server exited ({status}):\n{}", self.log_tail(15)),
                    format!("its whole log is {}", self.log.display()),
                )
                .into());
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                _ = cancel.cancelled() => return Ok(()),
            }
        }
    }

    /// Stops the server (SIGTERM, then SIGKILL) and waits for it.
    pub async fn stop(self) {
        self.service.stop().await;
    }

    /// The last `lines` lines of the server's log.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> ServeOptions {
        ServeOptions {
            server: PathBuf::from("/c/bin/llama-server"),
            model: PathBuf::from("/c/models/m.gguf"),
            alias: "qwen-1.5b".into(),
            host: "127.0.0.1".into(),
            port: 8080,
            context: 16384,
            threads: 1,
            flash_attn: FlashAttn::Auto,
            template: None,
        }
    }

    #[test]
    fn the_server_gets_tools_one_slot_with_the_whole_context_and_its_threads() {
        assert_eq!(
            process::quote_argv(&options().argv()),
            "/c/bin/llama-server -m /c/models/m.gguf --alias qwen-1.5b --host 127.0.0.1 --port 8080 \
             --jinja -np 1 -c 16384 -t 1 -fa auto --no-webui"
        );
        assert_eq!(options().url(), "http://127.0.0.1:8080");
    }

    #[test]
    fn a_corrected_template_replaces_the_models_own() {
        let mut o = options();
        o.template = Some(PathBuf::from("/c/templates/chatml-smol-tools.jinja"));
        o.flash_attn = FlashAttn::Off;
        let line = process::quote_argv(&o.argv());
        assert!(
            line.ends_with(
                "-fa off --no-webui --chat-template-file /c/templates/chatml-smol-tools.jinja"
            ),
            "{line}"
        );
    }

    #[test]
    fn two_cores_get_one_thread_and_more_cores_leave_one_free() {
        assert_eq!(threads_for(1), 1);
        assert_eq!(threads_for(2), 1);
        assert_eq!(threads_for(4), 3);
        assert_eq!(threads_for(16), 15);
        assert_eq!(threads_text(1), "1 thread");
        assert_eq!(threads_text(3), "3 threads");
    }

    #[test]
    fn a_free_port_is_free() {
        let port = free_port().unwrap();
        assert!(std::net::TcpListener::bind(("127.0.0.1", port)).is_ok());
    }
}
