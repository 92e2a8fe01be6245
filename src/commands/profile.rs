//! `vouch profile`: show which gate profile judges a repository, or a preset.

use std::io::Write;

use anyhow::Result;

use crate::cli::ProfileArgs;
use crate::gate::profile::{Profile, PRESETS, REPO_PROFILE};

use super::output::{self, Output};

pub fn run(args: ProfileArgs) -> Result<i32> {
    let mut out = output::stdout();
    show(&args, &mut out)?;
    out.finish()?;
    Ok(0)
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
    let repo = crate::git::open(&args.repo)?;
    let workdir = repo.workdir().unwrap_or(repo.path()).to_path_buf();
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
    let roots: Vec<String> = std::fs::read_dir(&workdir)?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    match Profile::detect(&roots) {
        Some(p) => {
            let text = PRESETS.iter().find(|(n, _)| *n == p.name).map(|(_, t)| *t).unwrap_or_default();
            out.line(&format!("# detected: preset `{}`", p.name))?;
            out.print(text)?;
            Ok(())
        }
        None => Err(crate::error::VouchError::usage_hint(
            "no profile: no .vouch/gate.toml and no marker file (Cargo.toml, go.mod, pyproject.toml, setup.cfg, setup.py, package.json)",
            "write .vouch/gate.toml, or pass --profile to vouch gate",
        )
        .into()),
    }
}
