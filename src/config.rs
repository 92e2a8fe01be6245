//! `vouch.toml`: settings for `vouch run` below the environment and the flags.
//!
//! The order, lowest first: built-in defaults, the user's file (`$XDG_CONFIG_HOME/vouch/vouch.toml`, else
//! `~/.config/vouch/vouch.toml`), the repository's file (`<repo>/vouch.toml`), the environment
//! (`VOUCH_ENDPOINT`, `VOUCH_MODEL`, `VOUCH_API_KEY_ENV`), the flags. A file is read once into typed values
//! (the tool mode into [`ToolMode`], numbers into numbers); a key the file does not know, or a value of the
//! wrong kind, is an error naming the file and the key.
//!
//! Where the model server is (`endpoint`) and which environment variable holds its key (`api_key_env`)
//! decide where a secret is sent, so only the user sets them: their own file, the environment and the
//! flags. A repository's file that sets either is refused ([`REPO_REFUSED`]): cloning a repository and
//! running vouch in it must not send any variable of the user's environment, as a bearer token, to a host
//! the repository chose.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Deserialize;

use crate::error::VouchError;
use crate::model::ToolMode;

/// The file name, in the repository and in the user's config directory.
pub const FILE_NAME: &str = "vouch.toml";

/// The keys a repository's `vouch.toml` may not set: they decide where secrets go.
pub const REPO_REFUSED: &[&str] = &["endpoint", "api_key_env"];

/// One layer of settings; `None` leaves the value to the layer below.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub endpoint: Option<String>,
    pub model: Option<String>,
    pub api_key_env: Option<String>,
    pub tool_mode: Option<ToolMode>,
    pub max_turns: Option<u32>,
    pub stall_turns: Option<u32>,
    pub repair_cycles: Option<u32>,
    pub context: Option<u64>,
    /// Tokens one reply may generate.
    pub max_tokens: Option<u32>,
    /// Bytes of file text the first message shows.
    pub preload: Option<usize>,
    pub profile: Option<String>,
    pub author: Option<String>,
    pub signoff: Option<bool>,
    /// `[forge]`: where pull requests go.
    pub forge: Option<ForgeSettings>,
}

/// The `[forge]` table: what `--forge`, `--forge-repo`, `--api-url`, `--remote`, `--token-env` and `--draft`
/// say, for `vouch pr`, `vouch gate --pr` and `vouch run --open-pr`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForgeSettings {
    pub forge: Option<crate::forge::Forge>,
    /// `OWNER/REPO`.
    pub repo: Option<String>,
    pub api_url: Option<String>,
    pub remote: Option<String>,
    pub token_env: Option<String>,
    pub draft: Option<bool>,
    /// A CA bundle (PEM) trusted over HTTPS besides the built-in roots: a self-hosted forge's company CA.
    pub ca_file: Option<std::path::PathBuf>,
}

/// The `[forge]` keys a repository's file may not set: they decide which host gets the token, and which
/// hosts are trusted to be the forge.
pub const REPO_REFUSED_FORGE: &[&str] = &["api_url", "remote", "token_env", "ca_file"];

impl ForgeSettings {
    /// `self` with every value `over` has replaced.
    pub fn overlay(self, over: ForgeSettings) -> ForgeSettings {
        ForgeSettings {
            forge: over.forge.or(self.forge),
            repo: over.repo.or(self.repo),
            api_url: over.api_url.or(self.api_url),
            remote: over.remote.or(self.remote),
            token_env: over.token_env.or(self.token_env),
            draft: over.draft.or(self.draft),
            ca_file: over.ca_file.or(self.ca_file),
        }
    }

    fn set(&self, key: &str) -> bool {
        match key {
            "api_url" => self.api_url.is_some(),
            "remote" => self.remote.is_some(),
            "ca_file" => self.ca_file.is_some(),
            _ => self.token_env.is_some(),
        }
    }
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
            max_tokens: over.max_tokens.or(self.max_tokens),
            preload: over.preload.or(self.preload),
            profile: over.profile.or(self.profile),
            author: over.author.or(self.author),
            signoff: over.signoff.or(self.signoff),
            forge: match (self.forge, over.forge) {
                (Some(low), Some(high)) => Some(low.overlay(high)),
                (low, high) => high.or(low),
            },
        }
    }

    /// The file at `path`, or nothing when there is no such file.
    pub fn load(path: &Path) -> Result<Settings> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Settings::default()),
            Err(e) => return Err(VouchError::usage(format!("read {}: {e}", path.display())).into()),
        };
        Settings::parse(&text)
            .map_err(|e| VouchError::usage(format!("{}: {e}", path.display())).into())
    }

    /// Reads the text of a file; the error names the key whose value is wrong.
    fn parse(text: &str) -> std::result::Result<Settings, String> {
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| e.message().to_string())?;
        // One key at a time, so that an error names its key: serde's messages for a bad value do not.
        let mut settings = Settings::default();
        for (key, value) in table {
            if let (true, toml::Value::Table(forge)) = (key == "forge", &value) {
                // `[forge]` one key at a time too: the error says `forge.KEY`.
                let mut layer = ForgeSettings::default();
                for (sub, v) in forge {
                    let one = toml::Table::from_iter([(sub.clone(), v.clone())]);
                    let more: ForgeSettings = one
                        .try_into()
                        .map_err(|e: toml::de::Error| format!("forge.{sub}: {}", e.message()))?;
                    layer = layer.overlay(more);
                }
                settings = settings.overlay(Settings {
                    forge: Some(layer),
                    ..Settings::default()
                });
                continue;
            }
            let one = toml::Table::from_iter([(key.clone(), value)]);
            let layer: Settings = one
                .try_into()
                .map_err(|e: toml::de::Error| format!("{key}: {}", e.message()))?;
            settings = settings.overlay(layer);
        }
        Ok(settings)
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
        let path = repo_root(repo).join(FILE_NAME);
        let repo = Settings::load(&path)?;
        repo.refuse_secrets(&path)?;
        Ok(user.overlay(repo))
    }

    /// A repository's layer that sets where secrets go is an error saying why.
    fn refuse_secrets(&self, path: &Path) -> Result<()> {
        let forge = self.forge.clone().unwrap_or_default();
        let set: Vec<String> = REPO_REFUSED
            .iter()
            .copied()
            .filter(|key| match *key {
                "endpoint" => self.endpoint.is_some(),
                _ => self.api_key_env.is_some(),
            })
            .map(str::to_string)
            .chain(
                REPO_REFUSED_FORGE
                    .iter()
                    .filter(|k| forge.set(k))
                    .map(|k| format!("forge.{k}")),
            )
            .collect();
        if set.is_empty() {
            return Ok(());
        }
        let keys = set
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(" and ");
        Err(VouchError::usage_hint(
            format!(
                "{}: a repository's {FILE_NAME} may not set {keys}: they decide which host gets which of your \
                 environment variables as an API key or token, and a repository you cloned must not choose that",
                path.display()
            ),
            format!(
                "remove {keys} from that file; set them in your own file ({}), with VOUCH_ENDPOINT / \
                 VOUCH_API_KEY_ENV, or with the flags (--endpoint, --api-key-env, --api-url, --remote, --token-env, --ca-file)",
                user_file()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| format!("~/.config/vouch/{FILE_NAME}"))
            ),
        )
        .into())
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
        assert_eq!(s.tool_mode, Some(ToolMode::Constrained));
        assert_eq!(s.signoff, Some(true));
    }

    #[test]
    fn a_file_is_read_into_typed_values() {
        let text =
            "endpoint = \"http://gpu:8000\"\nmodel = \"qwen3-coder\"\napi_key_env = \"KEY\"\n\
                    tool_mode = \"native\"\nmax_turns = 30\nstall_turns = 5\nrepair_cycles = 0\n\
                    context = 65536\nprofile = \"rust\"\nauthor = \"A <a@b.c>\"\nsignoff = false\n";
        assert_eq!(
            Settings::parse(text).unwrap(),
            Settings {
                endpoint: Some("http://gpu:8000".into()),
                model: Some("qwen3-coder".into()),
                api_key_env: Some("KEY".into()),
                tool_mode: Some(ToolMode::Native),
                max_turns: Some(30),
                stall_turns: Some(5),
                repair_cycles: Some(0),
                context: Some(65536),
                max_tokens: None,
                preload: None,
                profile: Some("rust".into()),
                author: Some("A <a@b.c>".into()),
                signoff: Some(false),
                forge: None,
            }
        );
        assert_eq!(Settings::parse("").unwrap(), Settings::default());
    }

    #[test]
    fn a_bad_value_is_a_load_error_naming_the_file_and_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        for (text, key, why) in [
            (
                "tool_mode = \"fast\"\n",
                "tool_mode",
                "unknown variant `fast`",
            ),
            ("max_turns = \"many\"\n", "max_turns", "invalid type"),
            ("max_turns = -1\n", "max_turns", "-1"),
            ("signoff = \"yes\"\n", "signoff", "invalid type"),
            ("context = 1.5\n", "context", "invalid type"),
        ] {
            std::fs::write(&path, text).unwrap();
            let err = Settings::load(&path).unwrap_err();
            assert_eq!(crate::error::exit_code_of(&err), crate::error::EXIT_USAGE);
            let err = format!("{err:#}");
            assert!(
                err.starts_with(&format!("{}: {key}: ", path.display())),
                "{text}: {err}"
            );
            assert!(err.contains(why), "{text}: {err}");
        }
    }

    #[test]
    fn a_repository_file_that_sets_where_secrets_go_is_refused_naming_the_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        for (text, keys) in [
            ("endpoint = \"http://evil:1\"\n", "`endpoint`"),
            ("api_key_env = \"HOME\"\n", "`api_key_env`"),
            (
                "endpoint = \"http://evil:1\"\napi_key_env = \"AWS_SECRET\"\nmax_turns = 3\n",
                "`endpoint` and `api_key_env`",
            ),
        ] {
            std::fs::write(&path, text).unwrap();
            let err = Settings::from_files(dir.path()).unwrap_err();
            assert_eq!(crate::error::exit_code_of(&err), crate::error::EXIT_USAGE);
            let msg = err.to_string();
            assert!(msg.contains(keys), "{msg}");
            assert!(msg.contains("may not set"), "{msg}");
        }
        std::fs::write(&path, "max_turns = 3\nmodel = \"m\"\n").unwrap();
        assert_eq!(Settings::from_files(dir.path()).unwrap().max_turns, Some(3));
    }

    #[test]
    fn the_forge_table_is_read_and_its_errors_name_forge_dot_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("user.toml");
        std::fs::write(
            &path,
            "model = \"m\"\n[forge]\nforge = \"gitea\"\nrepo = \"o/r\"\napi_url = \"http://h\"\n\
             remote = \"up\"\ntoken_env = \"MY_TOKEN\"\ndraft = true\nca_file = \"/etc/ca.pem\"\n",
        )
        .unwrap();
        let got = Settings::load(&path).unwrap();
        assert_eq!(
            got.forge,
            Some(ForgeSettings {
                forge: Some(crate::forge::Forge::Gitea),
                repo: Some("o/r".into()),
                api_url: Some("http://h".into()),
                remote: Some("up".into()),
                token_env: Some("MY_TOKEN".into()),
                draft: Some(true),
                ca_file: Some("/etc/ca.pem".into()),
            })
        );
        let low = Settings::load(&path).unwrap();
        let high = Settings {
            forge: Some(ForgeSettings {
                repo: Some("x/y".into()),
                ..ForgeSettings::default()
            }),
            ..Settings::default()
        };
        let merged = low.overlay(high).forge.unwrap();
        assert_eq!(
            (merged.repo.as_deref(), merged.remote.as_deref()),
            (Some("x/y"), Some("up"))
        );
        for (text, key) in [
            ("[forge]\nrepos = \"o/r\"\n", "forge.repos"),
            ("[forge]\ndraft = \"yes\"\n", "forge.draft"),
            ("[forge]\nforge = \"bitbucket\"\n", "forge.forge"),
        ] {
            std::fs::write(&path, text).unwrap();
            let err = format!("{:#}", Settings::load(&path).unwrap_err());
            assert!(
                err.contains(key) && err.contains(&path.display().to_string()),
                "{err}"
            );
        }
    }

    #[test]
    fn a_repository_file_may_not_say_where_the_forge_token_goes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        for key in [
            "api_url = \"http://evil\"",
            "remote = \"http://evil/o/r\"",
            "token_env = \"HOME\"",
            "ca_file = \"/tmp/evil-ca.pem\"",
        ] {
            std::fs::write(&path, format!("[forge]\n{key}\n")).unwrap();
            let err = Settings::from_files(dir.path()).unwrap_err();
            assert_eq!(crate::error::exit_code_of(&err), crate::error::EXIT_USAGE);
            let msg = err.to_string();
            let name = key.split(' ').next().unwrap();
            assert!(
                msg.contains(&format!("`forge.{name}`")) && msg.contains("may not set"),
                "{msg}"
            );
        }
        std::fs::write(
            &path,
            "[forge]\nforge = \"github\"\nrepo = \"o/r\"\ndraft = true\n",
        )
        .unwrap();
        let forge = Settings::from_files(dir.path()).unwrap().forge.unwrap();
        assert_eq!(forge.repo.as_deref(), Some("o/r"));
    }

    #[test]
    fn a_file_that_is_not_toml_is_a_load_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        std::fs::write(&path, "max_turns = \n").unwrap();
        let err = Settings::load(&path).unwrap_err();
        assert_eq!(crate::error::exit_code_of(&err), crate::error::EXIT_USAGE);
        assert!(
            format!("{err:#}").starts_with(&path.display().to_string()),
            "{err:#}"
        );
    }
}
