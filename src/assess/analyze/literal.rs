//! Literal values: string bodies with escapes, integers, permission
//! constants, and the decoders the folder undoes (base64, hex, rot13).

use std::borrow::Cow;

use super::BLOB_LEN;
use super::{Node, K};

pub(super) fn shorten(s: &str) -> String {
    // Where the 60th character starts, and whether a 61st follows: found
    // without counting every character of a long text, and the kept part
    // copied at once rather than pushed a character at a time.
    let mut starts = s.char_indices().map(|(i, _)| i);
    match (starts.nth(59), starts.next()) {
        (Some(cut), Some(_)) => {
            let mut o = String::with_capacity(cut + '…'.len_utf8());
            o.push_str(&s[..cut]);
            o.push('…');
            o
        }
        _ => s.to_string(),
    }
}

/// The value of a string literal without interpolations, escapes decoded.
pub(super) fn string_value(src: &str, n: Node) -> Option<String> {
    string_cow(src, n).map(Cow::into_owned)
}

/// [`string_value`], borrowed from the source when there is nothing to
/// unescape (most literals): the analysis keeps every literal's value, and
/// each was a copy.
pub(super) fn string_cow<'s>(src: &'s str, n: Node) -> Option<Cow<'s, str>> {
    if n.children().any(|k| k.kind() == K::Interpolation) {
        return None;
    }
    template_cow(src, n)
}

/// The text of a string literal between its quotes, escapes decoded, and an
/// f-string's placeholders kept as written (`{key}`): what the literal says
/// whatever fills them.
pub(super) fn template_cow<'s>(src: &'s str, n: Node) -> Option<Cow<'s, str>> {
    let text = src.get(n.byte_range())?;
    let quote_at = text.find(['\'', '"'])?;
    let prefix = text[..quote_at].to_ascii_lowercase();
    let body = &text[quote_at..];
    let q = if body.starts_with("\"\"\"") || body.starts_with("'''") {
        3
    } else {
        1
    };
    if body.len() < 2 * q {
        return Some(Cow::Borrowed(""));
    }
    let inner = body.get(q..body.len() - q)?;
    // Without a backslash there is nothing to unescape: the value is the
    // source's text.
    if prefix.contains('r') || !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    Some(Cow::Owned(unescape(inner)))
}

pub(super) fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(ch) = it.next() {
        if ch != '\\' {
            out.push(ch);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('0') => out.push('\0'),
            Some('\\') => out.push('\\'),
            Some('\'') => out.push('\''),
            Some('"') => out.push('"'),
            Some('\n') => {}
            Some('x') => {
                let h: String = [it.next(), it.next()].into_iter().flatten().collect();
                match u32::from_str_radix(&h, 16).ok().and_then(char::from_u32) {
                    Some(c) => out.push(c),
                    None => {
                        out.push_str("\\x");
                        out.push_str(&h);
                    }
                }
            }
            Some(o) => {
                out.push('\\');
                out.push(o);
            }
            None => out.push('\\'),
        }
    }
    out
}

pub(super) fn int_value(t: &str) -> Option<i64> {
    let t = t.replace('_', "").to_ascii_lowercase();
    if let Some(h) = t.strip_prefix("0x") {
        i64::from_str_radix(h, 16).ok()
    } else if let Some(o) = t.strip_prefix("0o") {
        i64::from_str_radix(o, 8).ok()
    } else if let Some(b) = t.strip_prefix("0b") {
        i64::from_str_radix(b, 2).ok()
    } else {
        t.parse().ok()
    }
}

pub(super) fn stat_const(name: &str) -> Option<i64> {
    Some(match name {
        "S_ISUID" => 0o4000,
        "S_ISGID" => 0o2000,
        "S_ISVTX" => 0o1000,
        "S_IRWXU" => 0o700,
        "S_IRWXG" => 0o070,
        "S_IRWXO" => 0o007,
        "S_IWOTH" => 0o002,
        "S_IROTH" => 0o004,
        "S_IXOTH" => 0o001,
        "S_IRUSR" => 0o400,
        "S_IWUSR" => 0o200,
        "S_IXUSR" => 0o100,
        "S_IRGRP" => 0o040,
        "S_IWGRP" => 0o020,
        "S_IXGRP" => 0o010,
        _ => return None,
    })
}

pub(super) fn join_path(parts: &[String]) -> String {
    let mut out = String::new();
    for p in parts {
        if p.starts_with('/') || out.is_empty() {
            out = p.clone();
        } else {
            if !out.ends_with('/') {
                out.push('/');
            }
            out.push_str(p);
        }
    }
    out
}

pub(super) fn rot13(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            'a'..='m' | 'A'..='M' => char::from(c as u8 + 13),
            'n'..='z' | 'N'..='Z' => char::from(c as u8 - 13),
            _ => c,
        })
        .collect()
}

pub(super) fn hexdecode(s: &str) -> Option<Vec<u8>> {
    let clean: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !clean.len().is_multiple_of(2) {
        return None;
    }
    clean
        .chunks(2)
        .map(|p| {
            let h = std::str::from_utf8(p).ok()?;
            u8::from_str_radix(h, 16).ok()
        })
        .collect()
}

/// Base64, both alphabets (`b64decode`, `urlsafe_b64decode`), whitespace
/// skipped and padding optional.
pub(super) fn b64decode(s: &str) -> Option<Vec<u8>> {
    decode_bits(s, 6, |b| match b {
        b'A'..=b'Z' => Some(b - b'A'),
        b'a'..=b'z' => Some(b - b'a' + 26),
        b'0'..=b'9' => Some(b - b'0' + 52),
        b'+' | b'-' => Some(62),
        b'/' | b'_' => Some(63),
        _ => None,
    })
}

/// Base32 (RFC 4648 alphabet, padding optional): what `base64.b32decode`
/// reads.
pub(super) fn b32decode(s: &str) -> Option<Vec<u8>> {
    decode_bits(s, 5, |b| match b {
        b'A'..=b'Z' => Some(b - b'A'),
        b'2'..=b'7' => Some(b - b'2' + 26),
        _ => None,
    })
}

/// The bytes of `s` read as symbols of `width` bits each (`value` of a
/// symbol; `=` ends the data, whitespace is skipped, anything else fails).
/// Written here rather than with the `base64` crate: a script's literal is
/// decoded as Python's lenient decoders read it (either alphabet, embedded
/// newlines, missing padding), which the crate's engines reject, and one
/// loop serves both widths.
fn decode_bits(s: &str, width: u32, value: impl Fn(u8) -> Option<u8>) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * width as usize / 8);
    let mut acc: u64 = 0;
    let mut bits = 0u32;
    for b in s.bytes() {
        let v = match b {
            b'=' => break,
            b if b.is_ascii_whitespace() => continue,
            b => value(b)?,
        };
        acc = (acc << width) | u64::from(v);
        bits += width;
        if bits >= 8 {
            bits -= 8;
            out.push(((acc >> bits) & 0xff) as u8);
        }
    }
    Some(out)
}

pub(super) fn is_blob(s: &str) -> bool {
    s.len() >= BLOB_LEN
        && s.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_' | b'\n' | b'\r' | b' ')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Texts of up to 60 characters are kept whole, longer ones cut to 59
    /// and an ellipsis, counting characters, not bytes.
    #[test]
    fn shorten_cuts_at_sixty_characters() {
        for n in 0..70 {
            for c in ['a', 'é', '€'] {
                let s: String = std::iter::repeat_n(c, n).collect();
                let want = if n <= 60 {
                    s.clone()
                } else {
                    std::iter::repeat_n(c, 59).chain(['…']).collect()
                };
                assert_eq!(shorten(&s), want, "{n} {c}");
            }
        }
    }

    #[test]
    fn string_unescape_and_prefixes() {
        assert_eq!(unescape(r"a\x41\n\\"), "aA\n\\");
        assert_eq!(rot13("flfgrz"), "system");
        assert_eq!(
            b64decode("b3Muc3lzdGVt").as_deref(),
            Some(&b"os.system"[..])
        );
        assert_eq!(hexdecode("73797374656d").as_deref(), Some(&b"system"[..]));
        assert_eq!(int_value("0o4755"), Some(0o4755));
        assert_eq!(int_value("0x1_0"), Some(16));
        assert_eq!(
            join_path(&["/etc".into(), "cron.d".into(), "x".into()]),
            "/etc/cron.d/x"
        );
    }
}
