//! `vouch pr` over real SSH: an `sshd` the test starts on a loopback port with a config of its own, a
//! throwaway `ssh-agent` holding the only key (whose file is deleted once added, so only the agent can sign
//! in), and a HOME whose `.ssh/known_hosts` holds the server's host key, or does not. The tests skip, saying
//! so, only where `sshd` is not installed (CI installs `openssh-server`).

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::forge::{fixture, git, FakeForge, Fixture, TOKEN};
use crate::util::Run;

/// The `sshd` binary, if installed (Debian puts it in /usr/sbin, outside a user's PATH); it must be called
/// by its absolute path.
fn sshd_binary() -> Option<PathBuf> {
    ["/usr/sbin/sshd", "/usr/local/sbin/sshd"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .or_else(|| which::which("sshd").ok())
}

macro_rules! sshd_or_skip {
    () => {
        match sshd_binary() {
            Some(bin) => bin,
            None => {
                eprintln!("skipped: sshd is not installed (Debian: openssh-server, which .ci/run installs)");
                return;
            }
        }
    };
}

fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A fresh ed25519 key pair at `path` (and `path.pub`), without a passphrase.
fn keygen(path: &Path) {
    run_ok(
        Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", "vouch-test", "-f"])
            .arg(path),
    );
}

/// `SHA256:…` of a public key, as `ssh-keygen -l` prints it.
fn fingerprint(public: &Path) -> String {
    let line = run_ok(Command::new("ssh-keygen").arg("-lf").arg(public));
    line.split_whitespace().nth(1).unwrap().to_string()
}

/// The public key's `TYPE BASE64` without its comment, as known_hosts holds it.
fn key_fields(public: &Path) -> String {
    let text = std::fs::read_to_string(public).unwrap();
    text.split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// An `sshd` in the foreground on a loopback port, its host key, authorized keys, pid file and log in `dir`;
/// killed on drop.
struct Sshd {
    child: Child,
    port: u16,
    dir: PathBuf,
    /// The user the test runs as, the only one allowed in.
    user: String,
}

impl Sshd {
    fn start(bin: &Path, dir: &Path, authorized: &Path) -> Sshd {
        std::fs::create_dir_all(dir).unwrap();
        keygen(&dir.join("host_key"));
        let user = run_ok(Command::new("id").arg("-un"));
        let root = std::fs::metadata("/proc/self").unwrap().uid() == 0;
        if root {
            // sshd started as root separates privileges into this directory (Debian's unit creates it).
            std::fs::create_dir_all("/run/sshd").unwrap();
        }
        let mut last_log = String::new();
        // The port is free when looked at; another process may take it before sshd binds it: try again.
        for _ in 0..3 {
            let port = free_port();
            let config = dir.join("sshd_config");
            std::fs::write(
                &config,
                format!(
                    "Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\nAuthorizedKeysFile {authorized}\n\
                     PubkeyAuthentication yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                     StrictModes no\nUsePAM no\nPermitRootLogin prohibit-password\nAllowUsers {user}\n\
                     PidFile {pid}\n",
                    host_key = dir.join("host_key").display(),
                    authorized = authorized.display(),
                    pid = dir.join("sshd.pid").display(),
                ),
            )
            .unwrap();
            let log = std::fs::File::create(dir.join("sshd.log")).unwrap();
            let child = Command::new(bin)
                .arg("-f")
                .arg(&config)
                .args(["-D", "-e"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .unwrap();
            let mut sshd = Sshd {
                child,
                port,
                dir: dir.to_path_buf(),
                user: user.clone(),
            };
            if sshd.ready() {
                return sshd;
            }
            last_log = sshd.log();
        }
        panic!("sshd did not start: {last_log}");
    }

    /// Whether the server answers with an SSH banner (within 10 seconds), rather than exiting.
    fn ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.child.try_wait().unwrap().is_some() {
                return false;
            }
            if let Ok(stream) = TcpStream::connect(("127.0.0.1", self.port)) {
                stream
                    .set_read_timeout(Some(Duration::from_secs(5)))
                    .unwrap();
                let mut banner = String::new();
                let _ = BufReader::new(stream).read_line(&mut banner);
                return banner.starts_with("SSH-2.0-OpenSSH");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    fn url(&self, repo: &Path) -> String {
        format!(
            "ssh://{}@127.0.0.1:{}{}",
            self.user,
            self.port,
            repo.display()
        )
    }

    fn host_public(&self) -> PathBuf {
        self.dir.join("host_key.pub")
    }

    /// The known_hosts line for this server.
    fn known_hosts_line(&self) -> String {
        format!(
            "[127.0.0.1]:{} {}\n",
            self.port,
            key_fields(&self.host_public())
        )
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("sshd.log")).unwrap_or_default()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An `ssh-agent` in the foreground on a socket in `dir`; killed on drop.
struct Agent {
    child: Child,
    sock: PathBuf,
}

impl Agent {
    fn start(dir: &Path) -> Agent {
        std::fs::create_dir_all(dir).unwrap();
        let sock = dir.join("agent.sock");
        let child = Command::new("ssh-agent")
            .arg("-D")
            .arg("-a")
            .arg(&sock)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let agent = Agent { child, sock };
        // The socket exists from its bind; the agent takes connections only once it listens (a loaded
        // machine showed the gap: ssh-add got "Connection refused").
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::os::unix::net::UnixStream::connect(&agent.sock).is_err() {
            assert!(Instant::now() < deadline, "ssh-agent takes no connection");
            std::thread::sleep(Duration::from_millis(20));
        }
        agent
    }

    /// Adds the private key at `key` to the agent, then deletes the key's file: only the agent holds it.
    fn add_and_forget(&self, key: &Path) {
        run_ok(
            Command::new("ssh-add")
                .arg("-q")
                .arg(key)
                .env("SSH_AUTH_SOCK", &self.sock),
        );
        std::fs::remove_file(key).unwrap();
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The push fixture of the forge tests with `origin` pointing at its bare repository over SSH: the server
/// knows one key (`keys/id`, outside HOME); the agent holds it when `load` says so.
struct Ssh {
    f: Fixture,
    sshd: Sshd,
    agent: Agent,
    home: PathBuf,
    url: String,
    /// The fingerprint of the key the server knows.
    user_fp: String,
}

impl Ssh {
    fn setup(bin: &Path, load: bool) -> Ssh {
        let f = fixture();
        let tmp = f.repo.tmp.path().to_path_buf();
        let keys = tmp.join("keys");
        std::fs::create_dir_all(&keys).unwrap();
        keygen(&keys.join("id"));
        let user_fp = fingerprint(&keys.join("id.pub"));
        let sshd = Sshd::start(bin, &tmp.join("sshd"), &keys.join("id.pub"));
        let agent = Agent::start(&tmp.join("agent"));
        if load {
            agent.add_and_forget(&keys.join("id"));
        }
        let home = tmp.join("home");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/known_hosts"), sshd.known_hosts_line()).unwrap();
        let url = sshd.url(&f.bare);
        f.repo.git(&["remote", "set-url", "origin", &url]);
        Ssh {
            f,
            sshd,
            agent,
            home,
            url,
            user_fp,
        }
    }

    fn known_hosts(&self) -> PathBuf {
        self.home.join(".ssh/known_hosts")
    }

    /// `vouch pr` of the run's workspace with HOME and the agent's socket, nothing else for SSH.
    fn pr(&self, forge: &FakeForge, agent: &str) -> Run {
        self.f.pr_env(
            forge,
            "github",
            &[],
            &[
                ("GITHUB_TOKEN", TOKEN),
                ("HOME", self.home.to_str().unwrap()),
                ("SSH_AUTH_SOCK", agent),
            ],
        )
    }

    fn sock(&self) -> &str {
        self.agent.sock.to_str().unwrap()
    }

    /// The bare repository's `vouch/t`, if it has one.
    fn remote_branch(&self) -> Option<String> {
        let out = Command::new("git")
            .args(["rev-parse", "--verify", "-q", "refs/heads/vouch/t"])
            .current_dir(&self.f.bare)
            .envs(crate::util::git_env())
            .output()
            .unwrap();
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// Asserts the run refused before anything reached the remote or the forge.
    fn assert_nothing_pushed(&self, forge: &FakeForge, run: &Run) {
        assert_eq!(self.remote_branch(), None, "pushed: {}", run.stderr);
        assert!(forge.seen().is_empty(), "no pull request without a push");
    }
}

#[test]
fn push_over_ssh_signs_in_through_the_agent_and_trusts_the_known_hosts_key() {
    let bin = sshd_or_skip!();
    let s = Ssh::setup(&bin, true);
    assert!(!s.f.repo.tmp.path().join("keys/id").exists());
    let forge = FakeForge::start();
    let before = crate::util::snapshot_dir(&s.f.repo.dir);

    let run = s.pr(&forge, s.sock());
    assert_eq!(
        run.code,
        0,
        "{}\n{}\n{}",
        run.stdout,
        run.stderr,
        s.sshd.log()
    );
    let shown = format!(
        "pushed vouch/t to ssh://127.0.0.1:{}{}",
        s.sshd.port,
        s.f.bare.display()
    );
    assert!(
        run.stdout.contains(&shown) && run.stdout.contains("opened pull request #1"),
        "{}",
        run.stdout
    );
    let local = s.f.repo.git(&["rev-parse", "vouch/t"]);
    assert_eq!(s.f.remote_sha("vouch/t"), local);
    // The server let in the agent's key, the one whose file is gone.
    let log = s.sshd.log();
    assert!(
        log.contains(&format!("Accepted publickey for {}", s.sshd.user))
            && log.contains(&s.user_fp),
        "{log}"
    );
    assert_eq!(s.f.repo.git(&["config", "remote.origin.url"]), s.url);
    // The checkout is as it was; git's record of the remote's branch is all the push adds.
    let after = crate::util::snapshot_dir(&s.f.repo.dir);
    let git_dir = s.f.repo.dir.join(".git");
    let changed: Vec<&PathBuf> = after
        .iter()
        .filter(|(p, bytes)| before.get(*p) != Some(*bytes))
        .map(|(p, _)| p)
        .chain(before.keys().filter(|p| !after.contains_key(*p)))
        .filter(|p| {
            !p.starts_with(git_dir.join("refs/remotes/origin"))
                && !p.starts_with(git_dir.join("logs/refs/remotes/origin"))
        })
        .collect();
    assert_eq!(changed, Vec::<&PathBuf>::new());

    // Hashed known_hosts entries (`ssh-keygen -H`, HashKnownHosts) are trusted as well, and the lease holds
    // over SSH: a branch someone else moved is not overwritten.
    run_ok(
        Command::new("ssh-keygen")
            .arg("-H")
            .arg("-f")
            .arg(s.known_hosts()),
    );
    let hashed = std::fs::read_to_string(s.known_hosts()).unwrap();
    assert!(
        hashed.starts_with("|1|") && !hashed.contains("127.0.0.1"),
        "{hashed}"
    );
    let tmp = s.f.repo.tmp.path();
    let other = tmp.join("other");
    git(
        tmp,
        &[
            "clone",
            "-q",
            "-b",
            "vouch/t",
            s.f.bare.to_str().unwrap(),
            other.to_str().unwrap(),
        ],
    );
    std::fs::write(other.join("theirs.txt"), "theirs\n").unwrap();
    git(&other, &["add", "-A"]);
    git(&other, &["commit", "-q", "-m", "theirs"]);
    git(&other, &["push", "-q", "origin", "vouch/t"]);
    let theirs = s.f.remote_sha("vouch/t");
    s.f.repo.git(&["checkout", "-q", "vouch/t"]);
    s.f.repo.write("src.txt", "a better fix\n");
    s.f.repo.commit("better fix");
    s.f.repo.git(&["checkout", "-q", "main"]);
    let run = s.pr(&forge, s.sock());
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("commits vouch did not make"),
        "{}",
        run.stderr
    );
    assert_eq!(s.f.remote_sha("vouch/t"), theirs);
}

#[test]
fn an_unknown_or_changed_ssh_host_key_is_refused_with_its_fingerprint_and_nothing_is_pushed() {
    let bin = sshd_or_skip!();
    let s = Ssh::setup(&bin, true);
    let forge = FakeForge::start();
    let host_fp = fingerprint(&s.sshd.host_public());
    let port = s.sshd.port;
    let impostor = s.f.repo.tmp.path().join("impostor");
    keygen(&impostor);
    let cases = [
        ("an empty known_hosts", String::new()),
        (
            "another key for the host",
            format!(
                "[127.0.0.1]:{port} {}\n",
                key_fields(&impostor.with_extension("pub"))
            ),
        ),
        (
            "the server's key under another host",
            format!("127.0.0.2 {}\n", key_fields(&s.sshd.host_public())),
        ),
    ];
    for (case, known) in cases {
        std::fs::write(s.known_hosts(), known).unwrap();
        let run = s.pr(&forge, s.sock());
        assert_eq!(run.code, 3, "{case}: {}\n{}", run.stdout, run.stderr);
        let want = format!(
            "the SSH host key of [127.0.0.1]:{port} (ssh-ed25519 {host_fp}) is not in known_hosts"
        );
        assert!(run.stderr.contains(&want), "{case}: {}", run.stderr);
        assert!(
            run.stderr.contains(&format!(
                "run `ssh -p {port} {}@127.0.0.1` once or add its key",
                s.sshd.user
            )),
            "{case}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("TLS"), "{case}: {}", run.stderr);
        s.assert_nothing_pushed(&forge, &run);
    }
    // No known_hosts at all.
    std::fs::remove_dir_all(s.home.join(".ssh")).unwrap();
    let run = s.pr(&forge, s.sock());
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("not in known_hosts"), "{}", run.stderr);
    s.assert_nothing_pushed(&forge, &run);
    let log = s.sshd.log();
    assert!(!log.contains("Accepted publickey"), "signed in: {log}");
}

#[test]
fn an_ssh_agent_without_a_usable_key_is_named_and_nothing_is_pushed() {
    let bin = sshd_or_skip!();
    let s = Ssh::setup(&bin, false);
    let forge = FakeForge::start();
    let refused = format!(
        "refused every key of the SSH agent at SSH_AUTH_SOCK: the agent has no usable key for {}",
        s.sshd.user
    );

    // The agent holds no key.
    let run = s.pr(&forge, s.sock());
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains(&refused), "{}", run.stderr);
    assert!(run.stderr.contains("ssh-add"), "{}", run.stderr);
    s.assert_nothing_pushed(&forge, &run);

    // The agent holds a key the server does not know.
    let stranger = s.f.repo.tmp.path().join("keys/stranger");
    keygen(&stranger);
    s.agent.add_and_forget(&stranger);
    let run = s.pr(&forge, s.sock());
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains(&refused), "{}", run.stderr);
    s.assert_nothing_pushed(&forge, &run);

    // No agent at all.
    let run = s.pr(&forge, "");
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains("no SSH agent is running (SSH_AUTH_SOCK is not set)"),
        "{}",
        run.stderr
    );
    s.assert_nothing_pushed(&forge, &run);
    let log = s.sshd.log();
    assert!(!log.contains("Accepted publickey"), "signed in: {log}");
}
