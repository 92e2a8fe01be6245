//! `vouch.toml`: settings for `vouch run` below the environment and the flags.
//!
//! The order, lowest first: built-in defaults, the user's file (`$XDG_CONFIG_HOME/vouch/vouch.toml`, else
//! `~/.config/vouch/vouch.toml`), the repository's file (`<repo>/vouch.toml`), the environment
//! (`VOUCH_ENDPOINT`, `VOUCH_MODEL`, `VOUCH_API_KEY_ENV`), the flags. A key a file does not know is an error
//! naming the key and the file.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Deserialize;

use crate::cli::ToolModeArg;
use crate::error::VouchError;

/// The file name, in the repository and in the user's config directory.
pub const FILE_NAME: &str = "vouch.toml";

/// One layer of settings; `None` leaves the value to the layer below.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub endpoint: Option<String>,
    pub model: Option<String>,
    pub api_key_env: Option<String>,
    pub tool_mode: Option<ToolModeArg>,
    pub max_turns: Option<u32>,
    pub stall_turns: Option<u32>,
    pub repair_cycles: Option<u32>,
    pub context: Option<u64>,
    pub profile: Option<String>,
    pub author: Option<String>,
    pub signoff: Option<bool>,
}

impl Settings {
    /// `self` with every value `over` has replaced.
    pub fn overlay(self, over: Settings) -> Settings {
        Settings {
            endpoint: over.endpoint.or(self.endpoint),
            model: over.model.or(self.model),
            api_key_env: over.api_key_env.or(self.api_key_env),
            tool_mode: over.tool_mode.or(self.tool_mode),
            max_turns: over.max_turns.or(self.max_turns),
            stall_turns: over.stall_turns.or(self.stall_turns),
            repair_cycles: over.repair_cycles.or(self.repair_cycles),
            context: over.context.or(self.context),
            profile: over.profile.or(self.profile),
            author: over.author.or(self.author),
            signoff: over.signoff.or(self.signoff),
        }
    }

    /// The file at `path`, or nothing when there is no such file.
    pub fn load(path: &Path) -> Result<Settings> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Settings::default()),
            Err(e) => return Err(VouchError::usage(format!("read {}: {e}", path.display())).into()),
        };
        toml::from_str(&text)
            .map_err(|e| VouchError::usage(format!("{}: {}", path.display(), e.message())).into())
    }

    /// The environment's layer: `VOUCH_ENDPOINT`, `VOUCH_MODEL`, `VOUCH_API_KEY_ENV` (empty counts as unset).
    pub fn from_env() -> Settings {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        Settings {
            endpoint: var("VOUCH_ENDPOINT"),
            model: var("VOUCH_MODEL"),
            api_key_env: var("VOUCH_API_KEY_ENV"),
            ..Settings::default()
        }
    }

    /// The user's file and the file of the repository around `repo`, merged (the repository's wins).
    pub fn from_files(repo: &Path) -> Result<Settings> {
        let user = match user_file() {
            Some(path) => Settings::load(&path)?,
            None => Settings::default(),
        };
        let repo = Settings::load(&repo_root(repo).join(FILE_NAME))?;
        Ok(user.overlay(repo))
    }
}

/// `$XDG_CONFIG_HOME/vouch/vouch.toml`, else `~/.config/vouch/vouch.toml`.
pub fn user_file() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| dirs::home_dir().map(|h| h.join(".config")))?;
    Some(base.join("vouch").join(FILE_NAME))
}

/// The top of the working tree around `dir`, else `dir` itself.
fn repo_root(dir: &Path) -> PathBuf {
    git2::Repository::discover(dir)
        .ok()
        .and_then(|r| r.workdir().map(Path::to_path_buf))
        .unwrap_or_else(|| dir.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_higher_layer_wins_and_gaps_fall_through() {
        let low = Settings {
            model: Some("low".into()),
            max_turns: Some(5),
            ..Settings::default()
        };
        let high = Settings {
            model: Some("high".into()),
            ..Settings::default()
        };
        let merged = low.overlay(high);
        assert_eq!(merged.model.as_deref(), Some("high"));
        assert_eq!(merged.max_turns, Some(5));
    }

    #[test]
    fn an_unknown_key_names_the_key_and_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        std::fs::write(&path, "max_turn = 3\n").unwrap();
        let err = format!("{:#}", Settings::load(&path).unwrap_err());
        assert!(err.contains("max_turn"), "{err}");
        assert!(err.contains(&path.display().to_string()), "{err}");
        let ok = dir.path().join("ok.toml");
        std::fs::write(&ok, "tool_mode = \"constrained\"\nsignoff = true\n").unwrap();
        let s = Settings::load(&ok).unwrap();
        assert_eq!(s.tool_mode, Some(ToolModeArg::Constrained));
        assert_eq!(s.signoff, Some(true));
    }
}
