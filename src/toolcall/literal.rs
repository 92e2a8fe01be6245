//! A lenient reader for the JSON and Python literals models write as arguments.
//!
//! serde_json rejects what models often write: single quotes, trailing commas, raw newlines inside
//! strings, Python's `True` and `None`, `\p` in a Windows path. Each of those has exactly one reading, so
//! it is repaired and reported. Anything that needs a guess (a missing brace, a missing comma, an unquoted
//! value) is a failure. The reader also says where a value ends, which is how parsers find the end of a
//! call inside free text, and whether a failure was the end of the input (a call cut off) or bad syntax.
//! One pass over the bytes; nesting is capped so hostile input cannot exhaust the stack.

use serde_json::{Map, Number, Value};

use super::scan::Ctx;

const MAX_DEPTH: u32 = 128;

/// The dialect to read.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Syntax {
    /// Python literals: `True`/`False`/`None` and single quotes are not repairs; triple-quoted strings.
    pub python: bool,
    /// Object keys may be bare words (Gemma 4).
    pub bare_keys: bool,
    /// A token that opens and closes a raw string (Gemma 4's `<|"|>`, FunctionGemma's `<escape>`).
    pub delim: Option<&'static str>,
}

impl Syntax {
    pub(crate) const JSON: Syntax = Syntax {
        python: false,
        bare_keys: false,
        delim: None,
    };
    pub(crate) const PYTHON: Syntax = Syntax {
        python: true,
        bare_keys: false,
        delim: None,
    };
}

/// The repairs a value needed, as a set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Repairs(u8);

impl Repairs {
    const SINGLE_QUOTES: u8 = 1;
    const TRAILING_COMMA: u8 = 2;
    const PYTHON_CONSTANT: u8 = 4;
    const CONTROL_CHAR: u8 = 8;
    const BAD_ESCAPE: u8 = 16;
    const APOSTROPHE: u8 = 32;
    const NAMES: [(u8, &'static str); 6] = [
        (Self::SINGLE_QUOTES, "single quotes"),
        (Self::TRAILING_COMMA, "a trailing comma"),
        (Self::PYTHON_CONSTANT, "Python constants"),
        (Self::CONTROL_CHAR, "a raw control character in a string"),
        (Self::BAD_ESCAPE, "an invalid escape kept as text"),
        (Self::APOSTROPHE, "an unescaped apostrophe"),
    ];

    pub(crate) fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub(crate) fn union(self, other: Repairs) -> Repairs {
        Repairs(self.0 | other.0)
    }

    pub(crate) fn describe(self) -> String {
        Self::NAMES
            .iter()
            .filter(|(bit, _)| self.0 & bit != 0)
            .map(|(_, name)| *name)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A value read from text, and the byte after it.
#[derive(Debug)]
pub(crate) struct Lit {
    pub value: Value,
    pub end: usize,
    pub repairs: Repairs,
}

/// Where reading stopped; `eof` when the input ended inside the value.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fail {
    pub eof: bool,
}

/// Reads one value starting at byte `start` (leading whitespace allowed).
pub(crate) fn read(text: &str, start: usize, syntax: Syntax, ctx: &mut Ctx) -> Result<Lit, Fail> {
    let mut r = Reader {
        text,
        b: text.as_bytes(),
        i: start,
        syntax,
        repairs: 0,
        depth: 0,
    };
    let value = r.value();
    ctx.charge(r.i.saturating_sub(start) + 1);
    value.map(|value| Lit {
        value,
        end: r.i,
        repairs: Repairs(r.repairs),
    })
}

/// Reads `text` as exactly one value with nothing but whitespace around it.
pub(crate) fn read_all(text: &str, syntax: Syntax, ctx: &mut Ctx) -> Result<Lit, Fail> {
    let lit = read(text, 0, syntax, ctx)?;
    let rest = &text.as_bytes()[lit.end..];
    ctx.charge(rest.len());
    if rest.iter().all(u8::is_ascii_whitespace) {
        Ok(lit)
    } else {
        Err(Fail { eof: false })
    }
}

struct Reader<'a> {
    text: &'a str,
    b: &'a [u8],
    i: usize,
    syntax: Syntax,
    repairs: u8,
    depth: u32,
}

impl Reader<'_> {
    fn fail(&self) -> Fail {
        Fail {
            eof: self.i >= self.b.len(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn delim_here(&self) -> Option<&'static str> {
        self.syntax
            .delim
            .filter(|d| self.b[self.i.min(self.b.len())..].starts_with(d.as_bytes()))
    }

    fn value(&mut self) -> Result<Value, Fail> {
        self.ws();
        let Some(c) = self.peek() else {
            return Err(self.fail());
        };
        if let Some(d) = self.delim_here() {
            return self.delimited(d).map(Value::String);
        }
        match c {
            b'{' => self.object(),
            b'[' => self.array(),
            b'"' | b'\'' => self.string().map(Value::String),
            b'-' | b'0'..=b'9' => self.number(),
            _ => self.word(),
        }
    }

    fn enter(&mut self) -> Result<(), Fail> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Fail { eof: false });
        }
        self.i += 1;
        Ok(())
    }

    fn object(&mut self) -> Result<Value, Fail> {
        self.enter()?;
        let mut map = Map::new();
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            self.depth -= 1;
            return Ok(Value::Object(map));
        }
        loop {
            self.ws();
            let key = self.key()?;
            self.ws();
            if self.peek() != Some(b':') {
                return Err(self.fail());
            }
            self.i += 1;
            let value = self.value()?;
            map.insert(key, value);
            self.ws();
            match self.peek() {
                Some(b',') => {
                    self.i += 1;
                    self.ws();
                    if self.peek() == Some(b'}') {
                        self.repairs |= Repairs::TRAILING_COMMA;
                        self.i += 1;
                        break;
                    }
                }
                Some(b'}') => {
                    self.i += 1;
                    break;
                }
                _ => return Err(self.fail()),
            }
        }
        self.depth -= 1;
        Ok(Value::Object(map))
    }

    fn key(&mut self) -> Result<String, Fail> {
        if let Some(d) = self.delim_here() {
            return self.delimited(d);
        }
        match self.peek() {
            Some(b'"' | b'\'') => self.string(),
            Some(c) if self.syntax.bare_keys && is_bare(c) => {
                let start = self.i;
                while self.peek().is_some_and(is_bare) {
                    self.i += 1;
                }
                Ok(self.text[start..self.i].to_string())
            }
            _ => Err(self.fail()),
        }
    }

    fn array(&mut self) -> Result<Value, Fail> {
        self.enter()?;
        let mut items = Vec::new();
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            self.depth -= 1;
            return Ok(Value::Array(items));
        }
        loop {
            items.push(self.value()?);
            self.ws();
            match self.peek() {
                Some(b',') => {
                    self.i += 1;
                    self.ws();
                    if self.peek() == Some(b']') {
                        self.repairs |= Repairs::TRAILING_COMMA;
                        self.i += 1;
                        break;
                    }
                }
                Some(b']') => {
                    self.i += 1;
                    break;
                }
                _ => return Err(self.fail()),
            }
        }
        self.depth -= 1;
        Ok(Value::Array(items))
    }

    fn delimited(&mut self, delim: &'static str) -> Result<String, Fail> {
        self.i += delim.len();
        match self.text[self.i..].find(delim) {
            Some(k) => {
                let s = self.text[self.i..self.i + k].to_string();
                self.i += k + delim.len();
                Ok(s)
            }
            None => {
                self.i = self.b.len();
                Err(self.fail())
            }
        }
    }

    fn string(&mut self) -> Result<String, Fail> {
        let q = self.b[self.i];
        if q == b'\'' && !self.syntax.python {
            self.repairs |= Repairs::SINGLE_QUOTES;
        }
        let triple = self.syntax.python && self.b[self.i..].starts_with(&[q, q, q]);
        self.i += if triple { 3 } else { 1 };
        let mut out = String::new();
        let mut chunk = self.i;
        loop {
            let Some(c) = self.peek() else {
                return Err(self.fail());
            };
            if c == b'\\' {
                out.push_str(&self.text[chunk..self.i]);
                self.escape(&mut out)?;
                chunk = self.i;
            } else if c == q {
                if triple {
                    if self.b[self.i..].starts_with(&[q, q, q]) {
                        out.push_str(&self.text[chunk..self.i]);
                        self.i += 3;
                        return Ok(out);
                    }
                    self.i += 1;
                } else if q == b'\''
                    && self
                        .b
                        .get(self.i + 1)
                        .is_some_and(u8::is_ascii_alphanumeric)
                {
                    // `'It's'`: a quote followed by a letter is an apostrophe, not the end.
                    self.repairs |= Repairs::APOSTROPHE;
                    self.i += 1;
                } else {
                    out.push_str(&self.text[chunk..self.i]);
                    self.i += 1;
                    return Ok(out);
                }
            } else {
                if c < 0x20 && !triple {
                    self.repairs |= Repairs::CONTROL_CHAR;
                }
                self.i += 1;
            }
        }
    }

    /// Decodes the escape at `self.i` (a backslash) into `out`. An unknown escape keeps its backslash and
    /// leaves the escaped character to the caller, so a multi-byte character is never split.
    fn escape(&mut self, out: &mut String) -> Result<(), Fail> {
        self.i += 1;
        let Some(e) = self.peek() else {
            return Err(self.fail());
        };
        self.i += 1;
        let c = match e {
            b'"' => '"',
            b'\'' => '\'',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => match self.unicode() {
                Some(c) => c,
                None => {
                    self.i -= 1;
                    self.keep_backslash(out);
                    return Ok(());
                }
            },
            b'\n' if self.syntax.python => return Ok(()),
            _ => {
                self.i -= 1;
                self.keep_backslash(out);
                return Ok(());
            }
        };
        out.push(c);
        Ok(())
    }

    fn keep_backslash(&mut self, out: &mut String) {
        if !self.syntax.python {
            self.repairs |= Repairs::BAD_ESCAPE;
        }
        out.push('\\');
    }

    /// The character of a `\uXXXX` escape (the `\u` already read), joining surrogate pairs.
    fn unicode(&mut self) -> Option<char> {
        let hi = self.hex4()?;
        if (0xD800..0xDC00).contains(&hi) && self.b[self.i..].starts_with(b"\\u") {
            let save = self.i;
            self.i += 2;
            if let Some(lo) = self.hex4().filter(|lo| (0xDC00..0xE000).contains(lo)) {
                return char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00));
            }
            self.i = save;
        }
        Some(char::from_u32(hi).unwrap_or('\u{FFFD}'))
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.b.get(self.i..self.i + 4)?;
        let s = std::str::from_utf8(digits).ok()?;
        let v = u32::from_str_radix(s, 16).ok()?;
        self.i += 4;
        Some(v)
    }

    fn digits(&mut self) -> Result<(), Fail> {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        if self.i == start {
            Err(self.fail())
        } else {
            Ok(())
        }
    }

    fn number(&mut self) -> Result<Value, Fail> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        self.digits()?;
        let mut integer = true;
        if self.peek() == Some(b'.') {
            integer = false;
            self.i += 1;
            self.digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            integer = false;
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            self.digits()?;
        }
        let s = &self.text[start..self.i];
        if integer {
            if let Ok(n) = s.parse::<i64>() {
                return Ok(Value::from(n));
            }
            if let Ok(n) = s.parse::<u64>() {
                return Ok(Value::from(n));
            }
        }
        s.parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or(Fail { eof: false })
    }

    fn word(&mut self) -> Result<Value, Fail> {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
        {
            self.i += 1;
        }
        let value = match &self.text[start..self.i] {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            "null" => Value::Null,
            word @ ("True" | "False" | "None") => {
                if !self.syntax.python {
                    self.repairs |= Repairs::PYTHON_CONSTANT;
                }
                match word {
                    "True" => Value::Bool(true),
                    "False" => Value::Bool(false),
                    _ => Value::Null,
                }
            }
            _ => {
                let fail = self.fail();
                self.i = start;
                return Err(fail);
            }
        };
        Ok(value)
    }
}

fn is_bare(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'$')
}
