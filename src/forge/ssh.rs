//! SSH remotes. vouch authenticates through the user's SSH agent only (`SSH_AUTH_SOCK`), never with a key
//! file it finds on disk, and trusts a server only when its host key is in the user's
//! `~/.ssh/known_hosts`. libgit2 checks known_hosts itself (through libssh2: plain and hashed `|1|salt|hash`
//! entries, `[host]:port` before `host`) and refuses an unknown or a changed key; vouch's certificate
//! callback only records the key the server showed and passes the decision through, never accepting a key
//! itself. This module gives those refusals their words: which host, which key, what to do.

use git2::cert::Cert;

/// The variable that names the SSH agent's socket.
pub const AGENT_VAR: &str = "SSH_AUTH_SOCK";

/// A host key a server showed, as the certificate callback saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostKey {
    /// The key's type as known_hosts spells it (`ssh-ed25519`).
    pub kind: String,
    /// `SHA256:…`, as `ssh` and `ssh-keygen -l` print it.
    pub fingerprint: Option<String>,
}

impl HostKey {
    /// The host key of an SSH certificate; `None` for a TLS one.
    pub(super) fn of(cert: &Cert<'_>) -> Option<HostKey> {
        let key = cert.as_hostkey()?;
        Some(HostKey {
            kind: key
                .hostkey_type()
                .map_or("unknown key type", |t| t.name())
                .to_string(),
            fingerprint: key.hash_sha256().map(fingerprint),
        })
    }
}

/// Where an SSH remote points: `ssh://[user@]host[:port]/path` or `[user@]host:path`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Endpoint {
    pub user: Option<String>,
    pub host: String,
    /// `None` for the default port, 22.
    pub port: Option<u16>,
}

impl Endpoint {
    /// The endpoint of an SSH URL; `None` for any other URL or a path.
    pub fn parse(url: &str) -> Option<Endpoint> {
        let (authority, scp) = match url.split_once("://") {
            Some((scheme, rest)) => {
                if !matches!(scheme, "ssh" | "git+ssh" | "ssh+git") {
                    return None;
                }
                (rest.split('/').next()?, false)
            }
            None => {
                let (authority, _) = url.split_once(':')?;
                if authority.contains('/') || authority.is_empty() {
                    return None;
                }
                (authority, true)
            }
        };
        let (user, hostport) = match authority.rsplit_once('@') {
            // A password in the URL is not the user's name, and never printed.
            Some((u, h)) => (u.split(':').next().map(str::to_string), h),
            None => (None, authority),
        };
        let (host, port) = match hostport.strip_prefix('[') {
            Some(rest) => {
                let (host, after) = rest.split_once(']')?;
                (host, after.strip_prefix(':'))
            }
            // scp-like syntax has no port: everything up to the first `:` is the host.
            None if scp => (hostport, None),
            None => match hostport.split_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (hostport, None),
            },
        };
        let port = match port {
            Some(p) => Some(p.parse::<u16>().ok()?),
            None => None,
        };
        (!host.is_empty()).then(|| Endpoint {
            user,
            host: host.to_string(),
            port: port.filter(|p| *p != 22),
        })
    }

    /// The host as known_hosts names it: `host`, or `[host]:port` off port 22.
    pub fn known_hosts_name(&self) -> String {
        match self.port {
            Some(p) => format!("[{}]:{p}", self.host),
            None => self.host.clone(),
        }
    }

    /// The `ssh` command that shows the key and offers to add it to known_hosts.
    pub fn ssh_command(&self) -> String {
        let target = match &self.user {
            Some(u) => format!("{u}@{}", self.host),
            None => self.host.clone(),
        };
        match self.port {
            Some(p) => format!("ssh -p {p} {target}"),
            None => format!("ssh {target}"),
        }
    }
}

/// The refusal of a host key known_hosts does not hold (or holds another key for): the host, the key shown,
/// the way to trust it. `url` is the remote's URL; `host` the name libgit2 connected to, when the URL is not
/// an SSH one vouch can read.
pub(super) fn host_key_message(url: &str, host: &str, key: Option<&HostKey>) -> String {
    let endpoint = Endpoint::parse(url).unwrap_or_else(|| Endpoint {
        user: None,
        host: host.to_string(),
        port: None,
    });
    let shown = match key {
        Some(HostKey {
            kind,
            fingerprint: Some(fp),
        }) => format!(" ({kind} {fp})"),
        Some(HostKey { kind, .. }) => format!(" ({kind})"),
        None => String::new(),
    };
    format!(
        "the SSH host key of {name}{shown} is not in known_hosts (~/.ssh/known_hosts), or differs from the key \
         recorded there; nothing was sent. If the fingerprint is the server's, run `{ssh}` once or add its key \
         to ~/.ssh/known_hosts",
        name = endpoint.known_hosts_name(),
        ssh = endpoint.ssh_command(),
    )
}

/// The refusal when no agent is running: vouch has no other way to sign in over SSH.
pub(super) fn no_agent_message(url: &str) -> String {
    format!(
        "{url} asks for an SSH key and no SSH agent is running ({AGENT_VAR} is not set): vouch signs in over SSH \
         through the agent only; start one (`eval $(ssh-agent)`) and `ssh-add` your key"
    )
}

/// The refusal when the agent's keys (none, or none the server takes) did not sign in `user`.
pub(super) fn agent_refused_message(url: &str, user: &str) -> String {
    format!(
        "{url} refused every key of the SSH agent at {AGENT_VAR}: the agent has no usable key for {user} \
         (`ssh-add -l` lists its keys; `ssh-add KEYFILE` adds the one the server knows)"
    )
}

/// Whether the agent's socket is named (an empty value is none).
pub(super) fn agent_named() -> bool {
    std::env::var_os(AGENT_VAR).is_some_and(|v| !v.is_empty())
}

/// `SHA256:` and the unpadded base64 of the hash, as OpenSSH prints fingerprints.
fn fingerprint(sha256: &[u8; 32]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::from("SHA256:");
    for chunk in sha256.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..=chunk.len() {
            out.push(char::from(ABC[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_urls_name_their_host_as_known_hosts_does() {
        let e = Endpoint::parse("ssh://git@127.0.0.1:2222/srv/r.git").unwrap();
        assert_eq!(
            e,
            Endpoint {
                user: Some("git".into()),
                host: "127.0.0.1".into(),
                port: Some(2222)
            }
        );
        assert_eq!(e.known_hosts_name(), "[127.0.0.1]:2222");
        assert_eq!(e.ssh_command(), "ssh -p 2222 git@127.0.0.1");
        let e = Endpoint::parse("ssh://github.com:22/o/r").unwrap();
        assert_eq!(
            (e.known_hosts_name(), e.ssh_command()),
            ("github.com".into(), "ssh github.com".into())
        );
        let e = Endpoint::parse("git@github.com:o/r.git").unwrap();
        assert_eq!(
            (e.known_hosts_name(), e.ssh_command()),
            ("github.com".into(), "ssh git@github.com".into())
        );
        let e = Endpoint::parse("ssh://git:s3cret@host:2222/r").unwrap();
        assert_eq!(e.ssh_command(), "ssh -p 2222 git@host");
        let e = Endpoint::parse("ssh://git@[::1]:2222/r").unwrap();
        assert_eq!(e.known_hosts_name(), "[::1]:2222");
        assert_eq!(Endpoint::parse("https://github.com/o/r"), None);
        assert_eq!(Endpoint::parse("/srv/git/r.git"), None);
    }

    #[test]
    fn fingerprints_are_printed_as_openssh_prints_them() {
        // `ssh-keygen -lf` of a key whose SHA-256 is all zeros would print 43 `A`s.
        assert_eq!(fingerprint(&[0; 32]), format!("SHA256:{}", "A".repeat(43)));
        // Python's `base64.b64encode(bytes(range(32)))` without its padding.
        let counting: [u8; 32] = std::array::from_fn(|i| i as u8);
        assert_eq!(
            fingerprint(&counting),
            "SHA256:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
        );
    }

    #[test]
    fn the_host_key_refusal_names_the_host_the_key_and_the_way_out() {
        let key = HostKey {
            kind: "ssh-ed25519".into(),
            fingerprint: Some("SHA256:abc".into()),
        };
        let m = host_key_message("ssh://git@127.0.0.1:2222/r.git", "127.0.0.1", Some(&key));
        assert!(
            m.contains("[127.0.0.1]:2222 (ssh-ed25519 SHA256:abc)"),
            "{m}"
        );
        assert!(m.contains("not in known_hosts"), "{m}");
        assert!(m.contains("run `ssh -p 2222 git@127.0.0.1` once"), "{m}");
        let m = host_key_message("weird", "h.example", None);
        assert!(m.contains("key of h.example is not"), "{m}");
    }
}
