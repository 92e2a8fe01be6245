//! `vouch profile`: show which gate profile judges a repository, or a preset; with `--ci`, where that
//! profile checks less than the repository's CI.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::cli::ProfileArgs;
use crate::gate::ci::{self, CiReport};
use crate::gate::profile::{Profile, PRESETS, REPO_PROFILE};

use super::output::{self, Output};

pub fn run(args: ProfileArgs) -> Result<i32> {
    let mut out = output::stdout();
    if args.ci || args.json.is_some() {
        compare_ci(&args, &mut out)?;
    } else {
        show(&args, &mut out)?;
    }
    out.finish()?;
    Ok(0)
}

/// `--ci`: the profile that would judge the repository (or `--name`'s) against the repository's CI.
fn compare_ci(args: &ProfileArgs, out: &mut Output<impl Write>) -> Result<()> {
    let workdir = workdir(&args.repo)?;
    let (profile, source) = match &args.name {
        Some(name) => (Profile::from_arg(name)?, format!("`{name}`")),
        None => judging(&workdir)?,
    };
    let report = ci::check(&workdir, &profile);
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, text + "\n").with_context(|| format!("write {}", path.display()))?;
    }
    for line in console(&report, &source) {
        out.line(&line)?;
    }
    Ok(())
}

/// The console section of a CI comparison.
fn console(report: &CiReport, source: &str) -> Vec<String> {
    let mut lines = Vec::new();
    if report.files.is_empty() {
        lines.push("CI: no CI files found (.github/workflows, .forgejo/workflows, .gitea/workflows, .gitlab-ci.yml, .woodpecker)".to_owned());
        return lines;
    }
    lines.push(format!(
        "CI: {} file(s), {} command(s), {} compared with profile {source}",
        report.files.len(),
        report.commands,
        report.compared
    ));
    if !report.skipped.is_empty() {
        lines.push(format!(
            "  not compared (they run only on tags, schedules or by hand): {}",
            report.skipped.join(", ")
        ));
    }
    for bad in &report.unreadable {
        lines.push(format!(
            "  {}: not readable as YAML: {}",
            bad.file, bad.error
        ));
    }
    if report.differences.is_empty() {
        lines.push("The gate covers every check CI runs that vouch can read.".to_owned());
    } else {
        lines.push("The gate is narrower than CI here:".to_owned());
        lines.extend(report.differences.iter().map(|d| format!("  {d}")));
    }
    lines
}

fn workdir(repo: &Path) -> Result<PathBuf> {
    let repo = crate::git::open(repo)?;
    Ok(repo.workdir().unwrap_or(repo.path()).to_path_buf())
}

/// The repository's own profile, else the detected preset, with how it was found.
fn judging(workdir: &Path) -> Result<(Profile, String)> {
    let own = workdir.join(REPO_PROFILE);
    if own.is_file() {
        let text = std::fs::read_to_string(&own)?;
        return Ok((
            Profile::from_toml(&text, &own.display().to_string())?,
            REPO_PROFILE.to_owned(),
        ));
    }
    match Profile::detect(&root_files(workdir)?) {
        Some(p) => {
            let source = format!("preset `{}` (detected)", p.name);
            Ok((p, source))
        }
        None => Err(no_profile()),
    }
}

fn root_files(workdir: &Path) -> Result<Vec<String>> {
    Ok(std::fs::read_dir(workdir)?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect())
}

fn no_profile() -> anyhow::Error {
    crate::error::VouchError::usage_hint(
        "no profile: no .vouch/gate.toml and no marker file (Cargo.toml, go.mod, pyproject.toml, setup.cfg, setup.py, package.json)",
        "write .vouch/gate.toml, or pass --profile to vouch gate",
    )
    .into()
}

fn show(args: &ProfileArgs, out: &mut Output<impl Write>) -> Result<()> {
    if args.list {
        for (name, _) in PRESETS {
            let p = Profile::preset(name)?;
            out.line(&format!(
                "{name:<8} {} (detected by {})",
                p.description,
                p.detect.join(", ")
            ))?;
        }
        return Ok(());
    }
    if let Some(name) = &args.name {
        if let Some((_, text)) = PRESETS.iter().find(|(n, _)| n == name) {
            Profile::preset(name)?;
            out.print(text)?;
        } else {
            Profile::from_arg(name)?;
            out.print(&std::fs::read_to_string(name)?)?;
        }
        return Ok(());
    }
    let workdir = workdir(&args.repo)?;
    let own = workdir.join(REPO_PROFILE);
    if own.is_file() {
        let text = std::fs::read_to_string(&own)?;
        Profile::from_toml(&text, &own.display().to_string())?;
        out.line(&format!(
            "# {REPO_PROFILE} (the gate reads it as committed at base)"
        ))?;
        out.print(&text)?;
        return Ok(());
    }
    match Profile::detect(&root_files(&workdir)?) {
        Some(p) => {
            let text = PRESETS
                .iter()
                .find(|(n, _)| *n == p.name)
                .map(|(_, t)| *t)
                .unwrap_or_default();
            out.line(&format!("# detected: preset `{}`", p.name))?;
            out.print(text)?;
            Ok(())
        }
        None => Err(no_profile()),
    }
}
