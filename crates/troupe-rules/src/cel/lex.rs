//! The lexer of CEL source text (Format 11.1): the tokens of CEL's grammar
//! (the lexical rules of cel-spec's `CEL.g4`), each with its byte range, and
//! the decoding of string literals. Parsing is [`super::parse`].
//!
//! Whitespace (space, tab, CR, LF, form feed) and `//` comments separate
//! tokens. Identifiers are ASCII (`[A-Za-z_][A-Za-z0-9_]*`); `true`,
//! `false`, `null` and `in` are keywords. Numbers: ints (`12`, `0x1F`),
//! uints (`12u`), doubles (`1.5`, `1e3`, `.5`). Strings: `'…'`, `"…"`,
//! triple-quoted (`'''…'''`, `"""…"""`, which may span lines), each raw
//! with an `r`/`R` prefix; bytes with a `b`/`B` prefix.

use std::ops::Range;

/// A token kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tok {
    Ident,
    /// A backquoted field name (`` `a-b` ``).
    EscIdent,
    Int,
    Uint,
    Float,
    Str,
    Bytes,
    True,
    False,
    Null,
    In,
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Dot,
    Comma,
    Minus,
    Plus,
    Star,
    Slash,
    Percent,
    Question,
    Colon,
    Not,
    EqEq,
    NotEq,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    /// The end of the source.
    Eof,
}

/// A token: its kind and byte range in the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token {
    pub kind: Tok,
    pub start: u32,
    pub end: u32,
}

impl Token {
    pub fn span(&self) -> Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// A lexical error: a plain message and the byte offset it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LexError {
    pub message: String,
    pub at: usize,
}

/// The tokens of `src`, ending with one [`Tok::Eof`], or the first
/// lexical error. `src` is at most [`super::parse::MAX_SOURCE_LEN`] bytes.
pub(crate) fn tokenize(src: &str) -> Result<Vec<Token>, LexError> {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len() / 3 + 2);
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        let kind = match c {
            b' ' | b'\t' | b'\r' | b'\n' | 0x0C => {
                i += 1;
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = memchr::memchr(b'\n', &b[i..]).map_or(b.len(), |n| i + n);
                continue;
            }
            b'0'..=b'9' => {
                let (kind, end) = number(b, i);
                i = end;
                kind
            }
            b'.' if b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                let (kind, end) = number(b, i);
                i = end;
                kind
            }
            b'"' | b'\'' => {
                i = string(src, i)?;
                Tok::Str
            }
            b'r' | b'R' if matches!(b.get(i + 1), Some(b'"' | b'\'')) => {
                i = string(src, i + 1)?;
                Tok::Str
            }
            b'b' | b'B' if matches!(b.get(i + 1), Some(b'"' | b'\'')) => {
                i = string(src, i + 1)?;
                Tok::Bytes
            }
            b'b' | b'B'
                if matches!(b.get(i + 1), Some(b'r' | b'R'))
                    && matches!(b.get(i + 2), Some(b'"' | b'\'')) =>
            {
                i = string(src, i + 2)?;
                Tok::Bytes
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                i += 1;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                match &b[start..i] {
                    b"true" => Tok::True,
                    b"false" => Tok::False,
                    b"null" => Tok::Null,
                    b"in" => Tok::In,
                    _ => Tok::Ident,
                }
            }
            b'`' => {
                let mut j = i + 1;
                while j < b.len()
                    && (b[j].is_ascii_alphanumeric()
                        || matches!(b[j], b'_' | b'.' | b'-' | b'/' | b' '))
                {
                    j += 1;
                }
                if j == i + 1 || b.get(j) != Some(&b'`') {
                    return Err(LexError {
                        message: "a backquoted name holds letters, digits, `_`, `.`, `-`, `/` \
                                  and spaces, and ends with a backquote"
                            .into(),
                        at: i,
                    });
                }
                i = j + 1;
                Tok::EscIdent
            }
            _ => {
                let two = |second: u8| b.get(i + 1) == Some(&second);
                let (kind, len) = match c {
                    b'(' => (Tok::LParen, 1),
                    b')' => (Tok::RParen, 1),
                    b'[' => (Tok::LBracket, 1),
                    b']' => (Tok::RBracket, 1),
                    b'{' => (Tok::LBrace, 1),
                    b'}' => (Tok::RBrace, 1),
                    b'.' => (Tok::Dot, 1),
                    b',' => (Tok::Comma, 1),
                    b'-' => (Tok::Minus, 1),
                    b'+' => (Tok::Plus, 1),
                    b'*' => (Tok::Star, 1),
                    b'/' => (Tok::Slash, 1),
                    b'%' => (Tok::Percent, 1),
                    b'?' => (Tok::Question, 1),
                    b':' => (Tok::Colon, 1),
                    b'!' if two(b'=') => (Tok::NotEq, 2),
                    b'!' => (Tok::Not, 1),
                    b'=' if two(b'=') => (Tok::EqEq, 2),
                    b'<' if two(b'=') => (Tok::Le, 2),
                    b'<' => (Tok::Lt, 1),
                    b'>' if two(b'=') => (Tok::Ge, 2),
                    b'>' => (Tok::Gt, 1),
                    b'&' if two(b'&') => (Tok::And, 2),
                    b'|' if two(b'|') => (Tok::Or, 2),
                    _ => return Err(unexpected_char(src, i)),
                };
                i += len;
                kind
            }
        };
        out.push(Token {
            kind,
            start: start as u32,
            end: i as u32,
        });
    }
    out.push(Token {
        kind: Tok::Eof,
        start: b.len() as u32,
        end: b.len() as u32,
    });
    Ok(out)
}

fn unexpected_char(src: &str, i: usize) -> LexError {
    let c = src[i..].chars().next().unwrap_or('\u{FFFD}');
    let message = match c {
        '=' => "unexpected `=`: compare with `==`".to_string(),
        '&' => "unexpected `&`: write `&&` for and".to_string(),
        '|' => "unexpected `|`: write `||` for or".to_string(),
        c if c.is_control() || c.is_whitespace() => {
            format!("unexpected character U+{:04X}", c as u32)
        }
        c => format!("unexpected character `{c}`"),
    };
    LexError { message, at: i }
}

/// A number starting at `i` (a digit, or `.` and a digit): its kind and
/// end, by the longest match of CEL's `NUM_FLOAT`, `NUM_INT`, `NUM_UINT`.
fn number(b: &[u8], i: usize) -> (Tok, usize) {
    let digits = |mut j: usize| {
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        j
    };
    // An exponent at `j`, if complete: its end.
    let exponent = |j: usize| -> Option<usize> {
        if !matches!(b.get(j), Some(b'e' | b'E')) {
            return None;
        }
        let mut k = j + 1;
        if matches!(b.get(k), Some(b'+' | b'-')) {
            k += 1;
        }
        b.get(k).filter(|d| d.is_ascii_digit())?;
        Some(digits(k))
    };
    let is_u = |j: usize| matches!(b.get(j), Some(b'u' | b'U'));
    if b[i] == b'.' {
        let j = digits(i + 1);
        return (Tok::Float, exponent(j).unwrap_or(j));
    }
    if b[i] == b'0'
        && b.get(i + 1) == Some(&b'x')
        && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
    {
        let mut j = i + 2;
        while j < b.len() && b[j].is_ascii_hexdigit() {
            j += 1;
        }
        return if is_u(j) {
            (Tok::Uint, j + 1)
        } else {
            (Tok::Int, j)
        };
    }
    let j = digits(i);
    if b.get(j) == Some(&b'.') && b.get(j + 1).is_some_and(u8::is_ascii_digit) {
        let k = digits(j + 1);
        return (Tok::Float, exponent(k).unwrap_or(k));
    }
    if let Some(k) = exponent(j) {
        return (Tok::Float, k);
    }
    if is_u(j) {
        return (Tok::Uint, j + 1);
    }
    (Tok::Int, j)
}

/// The length of an escape sequence at `b[i]` (a backslash) that CEL's
/// lexer accepts, or `None`.
fn escape_len(b: &[u8], i: usize) -> Option<usize> {
    let hex = |from: usize, n: usize| {
        (from..from + n).all(|k| b.get(k).is_some_and(u8::is_ascii_hexdigit))
    };
    match *b.get(i + 1)? {
        b'a' | b'b' | b'f' | b'n' | b'r' | b't' | b'v' | b'"' | b'\'' | b'\\' | b'?' | b'`' => {
            Some(2)
        }
        b'0'..=b'3' => (matches!(b.get(i + 2), Some(b'0'..=b'7'))
            && matches!(b.get(i + 3), Some(b'0'..=b'7')))
        .then_some(4),
        b'x' | b'X' => hex(i + 2, 2).then_some(4),
        b'u' => hex(i + 2, 4).then_some(6),
        b'U' => hex(i + 2, 8).then_some(10),
        _ => None,
    }
}

/// A string whose opening quote is at `q` (after any `r`/`b` prefix,
/// which starts the token): the end of the string.
fn string(src: &str, q: usize) -> Result<usize, LexError> {
    let b = src.as_bytes();
    let quote = b[q];
    let raw = q > 0 && matches!(b[q - 1], b'r' | b'R');
    let triple = b.get(q + 1) == Some(&quote) && b.get(q + 2) == Some(&quote);
    let name = if quote == b'"' { "\"" } else { "'" };
    if triple {
        let mut i = q + 3;
        while i < b.len() {
            if b[i] == quote && b.get(i + 1) == Some(&quote) && b.get(i + 2) == Some(&quote) {
                return Ok(i + 3);
            }
            if b[i] == b'\\' && !raw {
                i += escape_len(b, i).ok_or_else(|| bad_escape(src, i))?;
            } else {
                i += 1;
            }
        }
        return Err(LexError {
            message: format!(
                "this string has no closing `{name}{name}{name}` (a triple-quoted string ends with three quotes)"
            ),
            at: q,
        });
    }
    let mut i = q + 1;
    while i < b.len() {
        match b[i] {
            c if c == quote => return Ok(i + 1),
            b'\n' | b'\r' => break,
            b'\\' if !raw => i += escape_len(b, i).ok_or_else(|| bad_escape(src, i))?,
            _ => i += 1,
        }
    }
    Err(LexError {
        message: format!(
            "this string has no closing `{name}` on its line (a string that spans lines is \
             triple-quoted)"
        ),
        at: q,
    })
}

fn bad_escape(src: &str, i: usize) -> LexError {
    let shown: String = src[i..].chars().take(2).collect();
    LexError {
        message: format!(
            "invalid escape `{shown}` in a string (the escapes are \\n, \\t, \\\\, \\', \\\", \
             \\xHH, \\uHHHH, \\UHHHHHHHH, octal \\ooo and \\a \\b \\f \\r \\v \\? \\`)"
        ),
        at: i,
    }
}

/// Why a literal's text does not decode.
pub(crate) type DecodeError = &'static str;

/// The value of a string or bytes literal token's text (`'…'`, `r"…"`,
/// `b'''…'''`, …): the bytes it stands for. Line breaks in the source
/// (CRLF, CR) are LF; raw literals are verbatim; in strings `\xHH` and octal
/// escapes are code points (UTF-8 encoded), in bytes they are byte values,
/// and bytes have no `\u`/`\U`. The text is one the lexer accepted.
pub(crate) fn decode(text: &str, is_bytes: bool) -> Result<Vec<u8>, DecodeError> {
    let mut t = text;
    if is_bytes {
        t = &t[1..];
    }
    let raw = t.starts_with(['r', 'R']);
    if raw {
        t = &t[1..];
    }
    let q = t.as_bytes()[0];
    let triple = t.len() >= 6 && t.as_bytes()[1] == q && t.as_bytes()[2] == q;
    let body = if triple {
        &t[3..t.len() - 3]
    } else {
        &t[1..t.len() - 1]
    };
    let mut out = Vec::with_capacity(body.len());
    let b = body.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'\r' {
            out.push(b'\n');
            i += if b.get(i + 1) == Some(&b'\n') { 2 } else { 1 };
            continue;
        }
        if c != b'\\' || raw {
            out.push(c);
            i += 1;
            continue;
        }
        let e = b[i + 1];
        let hex = |n: usize| {
            u32::from_str_radix(&body[i + 2..i + 2 + n], 16).map_err(|_| "invalid hex digits")
        };
        let code: u32 = match e {
            b'a' => 0x07,
            b'b' => 0x08,
            b'f' => 0x0C,
            b'n' => 0x0A,
            b'r' => 0x0D,
            b't' => 0x09,
            b'v' => 0x0B,
            b'\\' | b'\'' | b'"' | b'`' | b'?' => u32::from(e),
            b'x' | b'X' => {
                let v = hex(2)?;
                i += 4;
                if is_bytes {
                    out.push(v as u8);
                } else {
                    push_char(&mut out, v)?;
                }
                continue;
            }
            b'u' | b'U' => {
                if is_bytes {
                    return Err("bytes literals have no \\u or \\U escapes");
                }
                let n = if e == b'u' { 4 } else { 8 };
                let v = hex(n)?;
                push_char(&mut out, v)?;
                i += 2 + n;
                continue;
            }
            _ => {
                // Octal: three digits, the first 0–3.
                let v = u32::from(b[i + 1] - b'0') * 64
                    + u32::from(b[i + 2] - b'0') * 8
                    + u32::from(b[i + 3] - b'0');
                if is_bytes {
                    out.push(v as u8);
                } else {
                    push_char(&mut out, v)?;
                }
                i += 4;
                continue;
            }
        };
        out.push(code as u8);
        i += 2;
    }
    Ok(out)
}

fn push_char(out: &mut Vec<u8>, v: u32) -> Result<(), DecodeError> {
    let c = char::from_u32(v)
        .ok_or("an escape names no Unicode scalar value (a surrogate or above U+10FFFF)")?;
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<Tok> {
        tokenize(src).unwrap().into_iter().map(|t| t.kind).collect()
    }

    #[test]
    fn numbers_take_the_longest_match() {
        use Tok::*;
        assert_eq!(kinds("1.5e3"), [Float, Eof]);
        assert_eq!(kinds("1.e3"), [Int, Dot, Ident, Eof]);
        assert_eq!(kinds("1e+"), [Int, Ident, Plus, Eof]);
        assert_eq!(kinds("0x1Fu"), [Uint, Eof]);
        assert_eq!(kinds("0xg"), [Int, Ident, Eof]);
        assert_eq!(kinds(".5 12u"), [Float, Uint, Eof]);
    }

    #[test]
    fn strings_and_their_values() {
        let v = |s: &str| String::from_utf8(decode(s, false).unwrap()).unwrap();
        assert_eq!(v(r#"'a\n\x41\101\u00e9'"#), "a\nAAé");
        assert_eq!(v(r#"r'a\n'"#), "a\\n");
        assert_eq!(v("'''a\r\nb'''"), "a\nb");
        assert_eq!(decode(r#"b'\xff'"#, true).unwrap(), [0xff]);
        assert!(decode(r#"b'\u0041'"#, true).is_err());
        assert!(decode(r#"'\ud800'"#, false).is_err());
        assert_eq!(kinds(r#"b"x" br'y' r"z""#).len(), 4);
        assert!(tokenize("'abc").is_err());
        assert!(tokenize("'a\\q'").is_err());
        assert!(tokenize("'''a''").is_err());
    }
}
