//! The caps of a confined command: processes, file size, `/tmp`, the log kept.

/// The caps of every confined command; each can be set in the environment (`VOUCH_SANDBOX_PIDS`,
/// `VOUCH_SANDBOX_FILE_SIZE`, `VOUCH_SANDBOX_TMP_SIZE`, `VOUCH_LOG_CAP`; sizes like `4G`, `512M`, `64k`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Processes and threads at once.
    pub pids: u64,
    /// The largest file a command may write.
    pub file_size: u64,
    /// The size of the private `/tmp` (and `/var/tmp`, `/dev/shm`), which lives in memory.
    pub tmp_size: u64,
    /// Bytes kept of a step's log from each end.
    pub log: u64,
}

/// Default process cap: room for a parallel build and a test binary's threads on a large machine.
pub const DEFAULT_PIDS: u64 = 4096;
/// Default file-size cap.
pub const DEFAULT_FILE_SIZE: u64 = 4 << 30;
/// Default size of the private `/tmp`.
pub const DEFAULT_TMP_SIZE: u64 = 2 << 30;
/// Default bytes of a log kept from each end.
pub const DEFAULT_LOG_KEEP: u64 = 1 << 20;

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            pids: DEFAULT_PIDS,
            file_size: DEFAULT_FILE_SIZE,
            tmp_size: DEFAULT_TMP_SIZE,
            log: DEFAULT_LOG_KEEP,
        }
    }
}

impl Limits {
    /// The defaults, with what the environment sets instead (an unreadable value is warned about and ignored).
    pub fn from_env() -> Limits {
        let mut limits = Limits::default();
        for (var, field) in [
            ("VOUCH_SANDBOX_PIDS", &mut limits.pids),
            ("VOUCH_SANDBOX_FILE_SIZE", &mut limits.file_size),
            ("VOUCH_SANDBOX_TMP_SIZE", &mut limits.tmp_size),
            ("VOUCH_LOG_CAP", &mut limits.log),
        ] {
            let Ok(text) = std::env::var(var) else {
                continue;
            };
            match parse_size(&text) {
                Some(n) if n > 0 => *field = n,
                _ => {
                    tracing::warn!("{var}={text:?} is not a positive size or count; using {field}")
                }
            }
        }
        limits
    }
}

/// `4G`, `512M`, `64k`, `1000`: bytes (binary units), or a plain count.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let t = t.strip_suffix(['b', 'B']).unwrap_or(t);
    let t = t.strip_suffix(['i']).unwrap_or(t);
    let (digits, shift) = match t.chars().last()? {
        'k' | 'K' => (&t[..t.len() - 1], 10),
        'm' | 'M' => (&t[..t.len() - 1], 20),
        'g' | 'G' => (&t[..t.len() - 1], 30),
        't' | 'T' => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    digits.trim().parse::<u64>().ok()?.checked_mul(1 << shift)
}
