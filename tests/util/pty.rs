//! A real pseudo-terminal for the tests of what vouch draws on a terminal, and a small screen that replays
//! the bytes the way a terminal does (deferred autowrap, cursor moves, line and screen erases), so a test
//! can assert what a user saw and not only which bytes went by.

use std::fs::File;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

/// What a command wrote to its terminal, and how it ended.
pub struct PtyRun {
    pub code: i32,
    pub bytes: Vec<u8>,
}

impl PtyRun {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// Runs `cmd` with a new terminal of `cols` × `rows` as its controlling terminal and its stdin, stdout and
/// stderr; every byte it writes there, until the last holder of the terminal closes it.
pub fn run(mut cmd: Command, cols: u16, rows: u16) -> PtyRun {
    let size = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let (mut master, mut slave) = (-1, -1);
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    let master = unsafe { OwnedFd::from_raw_fd(master) };
    let slave = unsafe { OwnedFd::from_raw_fd(slave) };
    cmd.stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave.try_clone().unwrap()));
    unsafe {
        cmd.pre_exec(|| {
            // A session of its own, the terminal its controlling one (as a shell's job would have it).
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    // Only the child holds the terminal now: the reader sees EIO once it and its children close it.
    drop(cmd);
    drop(slave);
    let reader = std::thread::spawn(move || {
        let mut file = File::from(master);
        let mut bytes = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => bytes.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                // EIO: no process has the terminal open any more.
                Err(_) => break,
            }
        }
        bytes
    });
    let status = child.wait().unwrap();
    let bytes = reader.join().unwrap();
    PtyRun {
        code: status.code().unwrap_or(-1),
        bytes,
    }
}

/// A terminal screen `cols` wide that grows downwards (no scrolling off the top), fed bytes as a terminal
/// would be.
pub struct Screen {
    cols: usize,
    rows: Vec<Vec<char>>,
    row: usize,
    col: usize,
    /// The cursor stands past the last column: the next printable character wraps first.
    pending_wrap: bool,
    /// Every row's text each time the cursor left it, or it was erased (consecutive repeats dropped).
    pub history: Vec<String>,
    /// The text of each row that a character wrapped off: a line wider than the terminal.
    pub wrapped: Vec<String>,
    /// The whole screen each time the cursor went up to redraw: every frame as it stood when the next began.
    pub frames: Vec<Vec<String>>,
    /// Cursor-up and erase-line sequences seen: redraws in place.
    pub cursor_ups: usize,
    pub line_erases: usize,
    /// SGR sequences (`ESC [ … m`) that set anything but the default: colour or style.
    pub styled: usize,
}

impl Screen {
    pub fn new(cols: u16) -> Screen {
        Screen {
            cols: usize::from(cols),
            rows: vec![vec![]],
            row: 0,
            col: 0,
            pending_wrap: false,
            history: vec![],
            wrapped: vec![],
            frames: vec![],
            cursor_ups: 0,
            line_erases: 0,
            styled: 0,
        }
    }

    /// The screen's rows as text, trailing blanks trimmed, trailing empty rows dropped.
    pub fn lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self.rows.iter().map(|r| text(r)).collect();
        while out.last().is_some_and(String::is_empty) {
            out.pop();
        }
        out
    }

    pub fn feed(&mut self, bytes: &[u8]) {
        let s = String::from_utf8_lossy(bytes);
        let mut chars = s.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\x1b' => {
                    if chars.peek() != Some(&'[') {
                        chars.next();
                        continue;
                    }
                    chars.next();
                    let mut params = String::new();
                    let mut fin = '\0';
                    for c in chars.by_ref() {
                        if c.is_ascii_alphabetic() || c == '@' || c == '~' {
                            fin = c;
                            break;
                        }
                        params.push(c);
                    }
                    self.csi(&params, fin);
                }
                '\r' => {
                    self.col = 0;
                    self.pending_wrap = false;
                }
                '\n' => {
                    self.leave();
                    self.row += 1;
                    self.pending_wrap = false;
                    self.ensure_row();
                }
                '\x08' => {
                    self.col = self.col.saturating_sub(1);
                    self.pending_wrap = false;
                }
                c if c.is_control() => {}
                c => self.put(c),
            }
        }
        self.leave();
    }

    fn put(&mut self, c: char) {
        if self.pending_wrap {
            self.wrapped.push(text(&self.rows[self.row]));
            self.leave();
            self.row += 1;
            self.col = 0;
            self.pending_wrap = false;
            self.ensure_row();
        }
        let line = &mut self.rows[self.row];
        while line.len() <= self.col {
            line.push(' ');
        }
        line[self.col] = c;
        if self.col + 1 == self.cols {
            self.pending_wrap = true;
        } else {
            self.col += 1;
        }
    }

    fn csi(&mut self, params: &str, fin: char) {
        let n = |default: usize| {
            params
                .trim_start_matches('?')
                .split(';')
                .next()
                .and_then(|p| p.parse::<usize>().ok())
                .unwrap_or(default)
        };
        self.pending_wrap = false;
        match fin {
            'A' => {
                self.cursor_ups += 1;
                self.leave();
                let now = self.lines();
                if self.frames.last() != Some(&now) {
                    self.frames.push(now);
                }
                self.row = self.row.saturating_sub(n(1).max(1));
            }
            'B' => {
                self.leave();
                self.row += n(1).max(1);
                self.ensure_row();
            }
            'C' => self.col = (self.col + n(1).max(1)).min(self.cols - 1),
            'D' => self.col = self.col.saturating_sub(n(1).max(1)),
            'G' => self.col = n(1).max(1) - 1,
            'K' => {
                self.line_erases += 1;
                self.leave();
                let line = &mut self.rows[self.row];
                match n(0) {
                    0 => line.truncate(self.col),
                    1 => line.iter_mut().take(self.col + 1).for_each(|c| *c = ' '),
                    _ => line.clear(),
                }
            }
            'J' => {
                self.leave();
                if n(0) == 0 {
                    self.rows[self.row].truncate(self.col);
                    self.rows.truncate(self.row + 1);
                }
            }
            'm' if params.split(';').any(|p| !p.is_empty() && p != "0") => self.styled += 1,
            _ => {}
        }
    }

    fn ensure_row(&mut self) {
        while self.rows.len() <= self.row {
            self.rows.push(vec![]);
        }
    }

    /// Records the cursor's row as it is now.
    fn leave(&mut self) {
        let t = text(&self.rows[self.row]);
        if !t.is_empty() && self.history.last() != Some(&t) {
            self.history.push(t);
        }
    }
}

fn text(row: &[char]) -> String {
    row.iter().collect::<String>().trim_end().to_string()
}

#[test]
fn the_screen_redraws_in_place_and_wraps_as_a_terminal_does() {
    let mut s = Screen::new(10);
    s.feed(b"a: one\r\nb: one\x1b[1A\r\x1b[2Ka: two\r\n\x1b[2Kb: three\r\n0123456789x");
    assert_eq!(s.lines(), ["a: two", "b: three", "0123456789", "x"]);
    assert_eq!(s.wrapped, ["0123456789"]);
    assert_eq!((s.cursor_ups, s.line_erases), (1, 2));
    assert_eq!(s.frames, [["a: one", "b: one"]]);
    assert!(s.history.contains(&"a: one".to_string()) && s.history.contains(&"b: three".into()));
    // Exactly full: the cursor waits at the edge, a carriage return does not wrap.
    let mut s = Screen::new(3);
    s.feed(b"abc\rd");
    assert_eq!(s.lines(), ["dbc"]);
    assert!(s.wrapped.is_empty());
}
